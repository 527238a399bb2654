package cluster

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// The channels migration 0011's triggers notify on (store/migrations/postgres).
const (
	channelEvents   = "jean2_events"   // payload: the session whose log grew
	channelCommands = "jean2_commands" // payload: the instance a command is for
)

// PGNotifier listens to the notifications Postgres sends as events and commands commit,
// on a connection of its own.
type PGNotifier struct {
	// URL is the database's (store.DB.PostgresURL).
	URL string
}

// Listen implements Notifier.
func (p PGNotifier) Listen(ctx context.Context, instanceID string, events func(sessionID string), commands func()) error {
	conn, err := pgx.Connect(ctx, p.URL)
	if err != nil {
		return fmt.Errorf("connect to listen for notifications: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, ch := range []string{channelEvents, channelCommands} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return fmt.Errorf("listen on %s: %w", ch, err)
		}
	}
	// Commands sent while no connection listened wait in the table: read them now.
	commands()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for notifications: %w", err)
		}
		switch n.Channel {
		case channelEvents:
			events(n.Payload)
		case channelCommands:
			if n.Payload == instanceID {
				commands()
			}
		}
	}
}

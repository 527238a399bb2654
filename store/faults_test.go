package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Fault tells the database failing from a call it refused by the errors' types and
// codes, through any wrapping.
func TestFaultByType(t *testing.T) {
	for _, c := range []struct {
		err    error
		faulty bool
	}{
		{fmt.Errorf("list workspaces: %w", &pgconn.PgError{Code: "57P01"}), true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "53100"}, true},
		{&pgconn.PgError{Code: "23505"}, false}, // unique_violation: the call's fault
		{fmt.Errorf("get: %w", driver.ErrBadConn), true},
		{&pgconn.ConnectError{}, true},
		{fmt.Errorf("list: %w", context.Canceled), false},
		{ErrNotFound, false},
		{errors.New("connection refused"), false}, // words are not a type
	} {
		if got := Fault(c.err); (got != "") != c.faulty {
			t.Errorf("Fault(%v) = %q, want faulty=%v", c.err, got, c.faulty)
		}
	}
}

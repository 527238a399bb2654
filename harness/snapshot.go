package harness

import (
	"context"

	"github.com/jean2/jean2/tool"
)

// Snapshotter takes a snapshot of a workspace's folders when a turn starts.
type Snapshotter interface {
	Begin(ctx context.Context, roots []string) (SnapshotTurn, error)
}

// SnapshotTurn ends a turn's snapshot: the changes recorded through ctx.fs plus those found
// on disk, to file as the turn's ledger.
type SnapshotTurn interface {
	Finish(ctx context.Context, recorded []tool.Change) ([]tool.Change, error)
}

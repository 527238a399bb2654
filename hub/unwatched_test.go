package hub

import (
	"context"
	"sync"
	"testing"

	"github.com/jean2/jean2/store"
)

// Unwatched hears of exactly the events no subscription was handed: none while one is
// attached (even one that ends right after), all of them once nobody is.
func TestUnwatchedHearsOnlyWhatNobodyReceived(t *testing.T) {
	var mu sync.Mutex
	var heard []int64
	f := newFixture(t, Options{Unwatched: func(sid string, evs []store.Event) {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range evs {
			heard = append(heard, ev.Seq)
		}
	}})
	ctx := context.Background()
	sub, err := f.hub.Subscribe(ctx, f.sid, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.publishN(f.sid, 1, 2)
	sub.Close()
	f.publishN(f.sid, 3, 1)
	mu.Lock()
	defer mu.Unlock()
	if len(heard) != 1 || heard[0] != 3 {
		t.Fatalf("Unwatched heard seqs %v, want [3]", heard)
	}
}

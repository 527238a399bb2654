package hub

import (
	"context"
	"testing"
)

// BenchmarkPublishFanOut3 publishes one event per op to a session with three subscribers
// reading, and waits until all three have it: the store's commit plus the hand-over.
func BenchmarkPublishFanOut3(b *testing.B) {
	f := newFixture(b, Options{})
	ctx := context.Background()
	subs := make([]*Subscription, 3)
	for i := range subs {
		sub, err := f.hub.Subscribe(ctx, f.sid, 0)
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Close()
		subs[i] = sub
	}
	ev := numbered(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.hub.Publish(ctx, f.sid, ev); err != nil {
			b.Fatal(err)
		}
		for _, sub := range subs {
			if _, ok := <-sub.Events(); !ok {
				b.Fatal(sub.Err())
			}
		}
	}
}

package ask

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jean2/jean2/tool"
)

// grantsWith returns grants holding n session grants of one tool, for distinct directories.
func grantsWith(b *testing.B, n int) (*Grants, Call) {
	g := newGrants(b)
	c := baseCall()
	for i := range n {
		a := tool.Ask{Type: tool.AskPermission, Question: "Read?", Risk: "medium", Resource: "file", Paths: []string{fmt.Sprintf("/bench/dir%d", i)}}
		if _, err := g.Record(context.Background(), c, a, tool.DurationSession); err != nil {
			b.Fatal(err)
		}
	}
	return g, c
}

func BenchmarkGrantsCovers(b *testing.B) {
	for _, n := range []int{10, 1000} {
		g, c := grantsWith(b, n)
		path := fmt.Sprintf("/bench/dir%d/sub/file.txt", n-1) // the newest grant: a full scan
		b.Run(fmt.Sprintf("grants=%d", n), func(b *testing.B) {
			for b.Loop() {
				if !g.Covers(c, path, false) {
					b.Fatal("not covered")
				}
			}
		})
	}
}

func BenchmarkGrantsLookup(b *testing.B) {
	for _, n := range []int{10, 1000} {
		g, c := grantsWith(b, n)
		a := fileAsk(fmt.Sprintf("/bench/dir%d/file.txt", n-1), "read", "low")
		b.Run(fmt.Sprintf("grants=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, ok := g.Lookup(c, a); !ok {
					b.Fatal("not covered")
				}
			}
		})
	}
}

func BenchmarkBrokerCoveredPermission(b *testing.B) {
	g, c := grantsWith(b, 100)
	asker := tool.AskerFunc(func(context.Context, tool.Ask) (json.RawMessage, error) {
		b.Fatal("asked although covered")
		return nil, nil
	})
	br := newBroker(asker, g, c)
	a := fileAsk("/bench/dir50/file.txt", "read", "low")
	for b.Loop() {
		if v, err := br.Ask(context.Background(), a); err != nil || string(v) != "true" {
			b.Fatal(v, err)
		}
	}
}

package node

import (
	"context"
	"testing"

	"github.com/jean2/jean2/runtime/worker"
)

func TestSmoke(t *testing.T) {
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		p := newPool(t, rt, echoTool, worker.PoolOptions{})
		info, err := p.Load(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v", info)
		r := mustExecute(t, p, worker.Call{Input: []byte(`{"text":"hi"}`)}, &fakeHost{})
		t.Logf("%+v %s", r, r.Result)
	})
}

package host_test

import (
	"runtime"
	"strings"
	"testing"
)

// The attack of issue #12 point 11d: a worker answers with a 60 MiB result. The host must
// refuse it by its length, before decoding it, and without holding the whole line: its
// allocations during the call stay within a small multiple of the 8 MiB result limit
// (before, the line was buffered, copied and decoded: well over 120 MiB), and the call
// fails with the result-limit message. A call after it on the same tool works.
func TestLimitHugeResultIsRefusedUnread(t *testing.T) {
	f := newFixture(t)
	f.addTool("huge", jsTool("huge", "timeout: 120000,", `
  if (input.small) return { success: true, result: 'small' };
  return { success: true, result: 'x'.repeat(60 * 1024 * 1024) };`))
	f.start()
	if out := f.call("huge", `{"small":true}`); !out.Result.Success {
		t.Fatalf("warm-up call: %+v", out.Result)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out := f.call("huge", `{}`)
	runtime.ReadMemStats(&after)
	if out.Result.Success || !strings.Contains(out.Result.Error, "result size limit of 8388608 bytes") {
		t.Fatalf("a 60 MiB result: %+v", out.Result.Error)
	}
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("the host allocated %d MiB during the call", allocated>>20)
	if allocated > 24<<20 { // three times the limit: the line buffer, grown by doubling
		t.Fatalf("the host allocated %d MiB for a result refused at 8 MiB: the line was read whole", allocated>>20)
	}
	if out := f.call("huge", `{"small":true}`); !out.Result.Success {
		t.Fatalf("a call after the refused one: %+v", out.Result)
	}
}

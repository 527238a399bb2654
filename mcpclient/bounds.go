package mcpclient

// What an imported server can make jean2 hold or do is bounded here: a listing's length,
// the listings its notices cause, the progress and the waiting asks of a call, its logs.
// (A message's size: limit.go.)

import (
	"encoding/json"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"
)

// maxListed bounds what one listing of a server (its tools, prompts, resources or
// templates) keeps. The go-sdk follows a server's next cursor for as long as it gives one,
// and a server on the internet (which nothing confines) or a confined one could give one
// forever: jean2 kept 50,000 tools and 50,000 prompts from 100 pages in under 5 s, each
// tool offered to the model (TestAttackEndlessListFromServer). Servers people use list
// tens, at most hundreds.
const maxListed = 10_000

// listAll collects what seq lists; a listing past maxListed is stopped (no further page is
// asked for) and refused, what names it.
func listAll[T any](seq iter.Seq2[T, error], what string) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		if len(out) == maxListed {
			return nil, fmt.Errorf("more than %d %s, which jean2 does not keep", maxListed, what)
		}
		out = append(out, v)
	}
	return out, nil
}

// relister runs a listing again after a server said its list changed, one at a time, and
// coalesces notices: one that comes while a listing runs is one more listing after it (its
// change may have come after that listing's answer), however many came. A goroutine per
// notice, each waiting its turn, made 20,000 notices as many prompts/list round trips
// (TestAttackListChangedFlood), each up to a message's cap: ~60 bytes from the server, a
// whole listing's work in jean2.
type relister struct {
	mu      sync.Mutex
	running bool
	again   bool
}

// notice runs list in a goroutine of its own unless one runs; then that one lists once
// more when it is done.
func (r *relister) notice(list func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.running {
		r.again = true
		return
	}
	r.running = true
	go func() {
		for {
			list()
			r.mu.Lock()
			if !r.again {
				r.running = false
				r.mu.Unlock()
				return
			}
			r.again = false
			r.mu.Unlock()
		}
	}()
}

// progressBudget passes a call's progress on to report up to the host's per-call limits of
// a worker's log and progress messages (host.DefaultMaxLogLines, DefaultMaxLogBytes), and
// drops what comes after. The host counts what a worker sends; a server's notifications
// went to the call's progress one for one, each stored in its session's log
// (TestAttackProgressFloodFromServer: 30,000 in one call).
func progressBudget(report func(tool.Progress)) func(tool.Progress) {
	var mu sync.Mutex
	lines, bytes := 0, 0
	return func(p tool.Progress) {
		mu.Lock()
		lines, bytes = lines+1, bytes+len(p.Message)+len(p.Data)
		over := lines > host.DefaultMaxLogLines || bytes > host.DefaultMaxLogBytes
		mu.Unlock()
		if !over {
			report(p)
		}
	}
}

// pendingAsk counts an ask of a call (a server's elicitation or sampling request) as
// waiting, up to the host's limit of a worker's call (host.DefaultMaxPendingAsks); done
// must be called once it is answered. Past the limit the ask is refused unasked, as a
// person's no: a server's requests each became an ask waiting for the person, 40 of one
// call at once (TestAttackAskFloodFromServer).
func pendingAsk(n *atomic.Int64) (done func(), err error) {
	if n == nil {
		return func() {}, nil
	}
	if n.Add(1) > host.DefaultMaxPendingAsks {
		n.Add(-1)
		return nil, fmt.Errorf("%s: the server asked while %d of its asks of this call were waiting for an answer", tool.UserRejection, host.DefaultMaxPendingAsks)
	}
	return func() { n.Add(-1) }, nil
}

// What a server makes jean2 log — its log notifications, the requests jean2 declines
// unasked — reaches jean2's log (stderr: a service's journal) at most logsPerSecond lines
// a second after a burst of logBurst, each one's text cut at maxLogData bytes. A server
// sends them unasked, as many and as large as it likes: 5,000 of 64 KiB wrote 312 MiB to
// jean2's log (TestAttackLogFloodFromServer).
const (
	logsPerSecond = 20
	logBurst      = 100
	maxLogData    = 4 << 10
)

// serverLogs passes on one server's log notifications; its zero value is ready.
type serverLogs struct {
	once    sync.Once
	limit   *rate.Limiter
	dropped atomic.Int64
}

// pass logs p on log unless the server is over its rate (allow).
func (l *serverLogs) pass(log *slog.Logger, server string, p *mcp.LoggingMessageParams) {
	if !l.allow(log, server) {
		return
	}
	data, _ := json.Marshal(p.Data)
	log.Info("MCP server log", "server", server, "level", string(p.Level), "logger", p.Logger, "data", cutLogText(string(data)))
}

// allow reports whether a line the server causes (its log, a request declined) may go to
// log now, and says first how many were dropped since the last one that went.
func (l *serverLogs) allow(log *slog.Logger, server string) bool {
	l.once.Do(func() { l.limit = rate.NewLimiter(logsPerSecond, logBurst) })
	if !l.limit.Allow() {
		l.dropped.Add(1)
		return false
	}
	if n := l.dropped.Swap(0); n > 0 {
		log.Warn("MCP server makes jean2 log too much: lines dropped", "server", server, "dropped", n, "rate", fmt.Sprintf("%d/s", logsPerSecond))
	}
	return true
}

// cutLogText is s cut at maxLogData bytes, saying how long it was.
func cutLogText(s string) string {
	if len(s) <= maxLogData {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:maxLogData], len(s))
}

package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/undo"
)

// maxAPIResponse bounds what the chat reads of one API response (a long session's messages
// with their visualizations can be large, but not unbounded).
const maxAPIResponse = 256 << 20

// maxEventFrame bounds one WebSocket frame of the event stream.
const maxEventFrame = 64 << 20

// Client calls the jean2 server's HTTP API (docs/api.md).
type Client struct {
	http *http.Client
	// rediscover, when set, says where the server is now (see Options.Rediscover).
	rediscover func() (base, token string)

	// onDatabase, when set, hears when the server's database stops serving calls (down,
	// with words for the person) and when it serves them again.
	onDatabase func(down bool, words string)

	mu     sync.Mutex // guards what follows, which the loop, the stream and asks share
	base   string     // e.g. http://127.0.0.1:8742
	token  string     // the API token, for a server that requires one
	dbDown bool       // the last answer was 503 database_unavailable
}

// NewClient returns a client of the server at base (e.g. http://127.0.0.1:8742) that sends
// token, when not "", as its bearer token.
func NewClient(base, token string) *Client {
	return &Client{base: strings.TrimRight(base, "/"), token: token, http: &http.Client{}}
}

// Base is the server's URL, without a trailing slash.
func (c *Client) Base() string {
	base, _ := c.server()
	return base
}

func (c *Client) server() (base, token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.base, c.token
}

// moved asks rediscover where the server is now and follows it there; it returns the new
// address, or "" when the server is still where the client looks (or nothing says).
func (c *Client) moved() string {
	if c.rediscover == nil {
		return ""
	}
	base, token := c.rediscover()
	base = strings.TrimRight(base, "/")
	c.mu.Lock()
	defer c.mu.Unlock()
	if base == "" || base == c.base {
		return ""
	}
	c.base = base
	if token != "" {
		c.token = token
	}
	return base
}

// APIError is an error answer of the API: {"error":{"code","message","details"}}, with the
// HTTP status it came with.
type APIError struct {
	Status  int
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details"`
}

func (e *APIError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("the server answered %d %s", e.Status, http.StatusText(e.Status))
	}
	return e.Message
}

// isAPIError reports whether err is an API error with the code.
func isAPIError(err error, code string) (*APIError, bool) {
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == code {
		return ae, true
	}
	return nil, false
}

// Call sends in (when not nil) as JSON to the API path (e.g. /api/health) and decodes the
// answer into out (when not nil). An error answer of the server is an *APIError.
//
// A call the server's database could not serve (503 database_unavailable) did not happen
// (the server says to send it again), so it is sent again by itself, after the server's
// Retry-After, for up to databaseRetryFor or until ctx ends; onDatabase hears of it.
func (c *Client) Call(ctx context.Context, method, path string, in, out any) error {
	var data []byte
	if in != nil {
		var err error
		if data, err = json.Marshal(in); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	var since time.Time
	for {
		wait, err := c.callOnce(ctx, method, path, data, in != nil, out)
		ae, down := isAPIError(err, codeDatabaseUnavailable)
		var other *APIError
		switch {
		case down:
			c.databaseState(true, ae)
		case err == nil || errors.As(err, &other):
			c.databaseState(false, nil) // the server and its database answered
		}
		if !down {
			return err
		}
		if since.IsZero() {
			since = time.Now()
		} else if time.Since(since) > databaseRetryFor {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
	}
}

// codeDatabaseUnavailable is the API's code for a call its database could not serve.
const codeDatabaseUnavailable = "database_unavailable"

// databaseRetryFor bounds how long a call is sent again while the database is unavailable.
const databaseRetryFor = 2 * time.Minute

// databaseState follows whether the server's database answers, and tells onDatabase when
// that changes (once per outage, whichever calls see it).
func (c *Client) databaseState(down bool, ae *APIError) {
	c.mu.Lock()
	changed := c.dbDown != down
	c.dbDown = down
	hook := c.onDatabase
	c.mu.Unlock()
	if changed && hook != nil {
		hook(down, databaseWords(ae))
	}
}

// databaseWords says for the person what a database_unavailable answer reports: which
// database and why, from its details.
func databaseWords(ae *APIError) string {
	if ae == nil {
		return ""
	}
	var d struct {
		Database string `json:"database"`
		Reason   string `json:"reason"`
	}
	if json.Unmarshal(ae.Details, &d) != nil || d.Database == "" {
		return "database unavailable, retrying…"
	}
	return fmt.Sprintf("database unavailable, retrying… the server's %s database: %s", d.Database, d.Reason)
}

// callOnce makes one request of Call; wait is how long the server asked to wait before
// sending it again (its Retry-After).
func (c *Client) callOnce(ctx context.Context, method, path string, data []byte, hasBody bool, out any) (wait time.Duration, err error) {
	var body io.Reader
	if hasBody {
		body = bytes.NewReader(data)
	}
	base, token := c.server()
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if hasBody {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err // a *url.Error: it names the method and the URL
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIResponse))
	if err != nil {
		return 0, fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return retryAfter(resp.Header), apiErrorOf(resp.StatusCode, answer)
	}
	if out != nil && resp.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(answer, out); err != nil {
			return 0, fmt.Errorf("%s %s: the answer is not the JSON expected: %w", method, path, err)
		}
	}
	return 0, nil
}

// apiErrorOf reads an error answer of the API.
func apiErrorOf(status int, body []byte) *APIError {
	var wrapped struct {
		Error APIError `json:"error"`
	}
	_ = json.Unmarshal(body, &wrapped)
	ae := wrapped.Error
	ae.Status = status
	return &ae
}

// retryAfter is the wait a Retry-After header asks for (in seconds), kept between 250 ms
// and 5 s; 1 s without one.
func retryAfter(h http.Header) time.Duration {
	secs, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil {
		return time.Second
	}
	return min(max(time.Duration(secs)*time.Second, 250*time.Millisecond), 5*time.Second)
}

// health asks whether a jean2 server answers at the base URL.
func (c *Client) health(ctx context.Context) (healthAnswer, error) {
	var h healthAnswer
	if err := c.Call(ctx, http.MethodGet, "/api/health", nil, &h); err != nil {
		return h, err
	}
	if h.Status != "ok" {
		return h, fmt.Errorf("%s answered /api/health with status %q: is it a jean2 server?", c.Base(), h.Status)
	}
	return h, nil
}

type healthAnswer struct {
	Status string `json:"status"`
}

// session is a session as the API shows it: the stored fields, whether a turn runs, and
// the seq of its last event (the server's sessionView, of which the chat reads these).
type session struct {
	store.Session
	Running bool  `json:"running"`
	LastSeq int64 `json:"lastSeq"`
}

// turnChanges is one turn of GET /api/sessions/{id}/ledgers.
type turnChanges struct {
	LedgerID   string    `json:"ledgerId"`
	MessageID  string    `json:"messageId"`
	MessageSeq int64     `json:"messageSeq"`
	CreatedAt  time.Time `json:"createdAt"`
	RestoredAt time.Time `json:"restoredAt"`
	Changed    struct {
		Files  int `json:"files"`
		Failed int `json:"failed"`
	} `json:"changed"`
	Files []changedFile `json:"files"`
}

// changedFile is one path a turn changed, with both sides when the server holds them.
type changedFile struct {
	Path   string    `json:"path"`
	Ops    []string  `json:"ops"`
	Tools  []string  `json:"tools"`
	OK     bool      `json:"ok"`
	Errors []string  `json:"errors"`
	Before *fileSide `json:"before"`
	After  *fileSide `json:"after"`
}

// restore asks the server to put the session's files back as they were before the turn
// of messageID (POST /api/sessions/{id}/restore). A refusal (conflict) comes with the report
// that names the files changed outside jean2.
func (c *Client) restore(ctx context.Context, sessionID, messageID string, o undo.RestoreOptions) (undo.Report, error) {
	var out struct {
		Report undo.Report `json:"report"`
	}
	err := c.Call(ctx, http.MethodPost, "/api/sessions/"+url.PathEscape(sessionID)+"/restore",
		map[string]any{"messageId": messageID, "force": o.Force, "partial": o.Partial, "dryRun": o.DryRun}, &out)
	if ae, ok := isAPIError(err, "conflict"); ok {
		// The refusal's report names the files changed outside jean2.
		var d struct {
			Report undo.Report `json:"report"`
		}
		if json.Unmarshal(ae.Details, &d) == nil {
			return d.Report, err
		}
	}
	return out.Report, err
}

// streamItem is what the event stream hands the chat: an event, the hello frame of a
// (re)connection, a notice for the person, or the error that ended the stream for good.
type streamItem struct {
	event  *store.Event
	hello  *helloFrame
	notice string
	err    error
}

type helloFrame struct {
	LastSeq     int64            `json:"lastSeq"`
	Running     bool             `json:"running"`
	PendingAsks []hub.PendingAsk `json:"pendingAsks"`
}

// streamEvents follows the session's events from after, reconnecting with the last seq
// received when the connection drops (or the server drops a reader that fell behind), until
// ctx ends or the server goes away. It closes out when it returns.
func (c *Client) streamEvents(ctx context.Context, sessionID string, after int64, out chan<- streamItem) {
	defer close(out)
	send := func(it streamItem) bool {
		select {
		case out <- it:
			return true
		case <-ctx.Done():
			return false
		}
	}
	last := after
	failures := 0
	var lostSince time.Time
	for ctx.Err() == nil {
		connected := false
		err := c.streamOnce(ctx, sessionID, &last, send, &connected)
		if ctx.Err() != nil {
			return
		}
		if connected {
			failures, lostSince = 0, time.Time{}
		}
		status := websocket.CloseStatus(err)
		if status == server.CloseSlowSubscriber {
			continue // catch up at once from the last seq received
		}
		var ae *APIError
		if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 {
			send(streamItem{err: fmt.Errorf("the event stream was refused: %w", err)})
			return
		}
		// A server that shut down or went away is waited for: it is being restarted, most
		// likely, and the conversation goes on where it was when it is back.
		if down, isDown := isAPIError(err, codeDatabaseUnavailable); isDown {
			// The server is there, its database is not: said once per outage, with the
			// calls' notices, and retried for as long as the outage lasts.
			c.databaseState(true, down)
			lostSince = time.Time{}
		} else if lostSince.IsZero() {
			lostSince = time.Now()
			why := "connection to the server lost; reconnecting…"
			if status == websocket.StatusGoingAway {
				why = "the server shut down; reconnecting when it is back…"
			}
			if !send(streamItem{notice: why}) {
				return
			}
		} else if time.Since(lostSince) > reconnectFor {
			send(streamItem{err: fmt.Errorf("lost the connection to the server for %s: %w", reconnectFor, err)})
			return
		}
		if to := c.moved(); to != "" {
			// The server came back elsewhere (its address file says so): try there at once.
			if !send(streamItem{notice: "the server is now at " + to + "; reconnecting there…"}) {
				return
			}
			failures, lostSince = 0, time.Now()
			continue
		}
		failures++
		select {
		case <-time.After(time.Duration(1<<min(failures-1, 3)) * 250 * time.Millisecond):
		case <-ctx.Done():
			return
		}
	}
}

// reconnectFor is how long the chat tries to reach a server that went away (a restart)
// before it gives up.
const reconnectFor = 2 * time.Minute

// streamOnce reads one WebSocket connection until it ends; *last follows the events read.
func (c *Client) streamOnce(ctx context.Context, sessionID string, last *int64, send func(streamItem) bool, connected *bool) error {
	base, token := c.server()
	u := base + "/api/sessions/" + url.PathEscape(sessionID) + "/ws?after=" + fmt.Sprint(*last)
	u = "ws" + strings.TrimPrefix(u, "http")
	header := http.Header{}
	if token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: header, HTTPClient: c.http})
	if err != nil {
		if resp != nil && resp.StatusCode >= 400 {
			// The first KB of the refusal's body is there: it says why.
			var body []byte
			if resp.Body != nil {
				body, _ = io.ReadAll(resp.Body)
			}
			ae := apiErrorOf(resp.StatusCode, body)
			if ae.Message == "" {
				ae.Message = fmt.Sprintf("the server refused the event stream: %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
			}
			return ae
		}
		return err
	}
	defer conn.CloseNow()
	*connected = true
	c.databaseState(false, nil) // the server opened the stream: its database answered
	conn.SetReadLimit(maxEventFrame)
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		var head struct {
			Type string `json:"type"`
			Seq  *int64 `json:"seq"`
		}
		if err := json.Unmarshal(data, &head); err != nil {
			continue // not JSON: nothing the chat can use
		}
		switch {
		case head.Seq != nil:
			var ev store.Event
			if err := json.Unmarshal(data, &ev); err != nil {
				continue
			}
			if ev.Seq <= *last {
				continue
			}
			*last = ev.Seq
			if !send(streamItem{event: &ev}) {
				return ctx.Err()
			}
		case head.Type == "hello":
			var h helloFrame
			if json.Unmarshal(data, &h) == nil && !send(streamItem{hello: &h}) {
				return ctx.Err()
			}
		}
	}
}

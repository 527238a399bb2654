package server

import (
	"context"
	"crypto/ecdh"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	webpush "github.com/SherClockHolmes/webpush-go"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/store"
)

// Web Push (docs/web.md, "Notifications"): when a turn ends, fails or waits for a person and
// no client watches its session, every browser that subscribed gets a notification through
// its push service, encrypted for that browser (RFC 8291) and signed with jean2's VAPID key
// (RFC 8292). The webpush-go library does the encryption and the signing.

// PushOptions configure Web Push notifications.
type PushOptions struct {
	// Client sends the notifications to the push services (nil: a client with a 30 s
	// timeout).
	Client *http.Client
	// Contact is the VAPID "sub" claim: an e-mail address (mailto: optional) or an https:
	// URL where the push service can reach whoever runs this jean2 (jean2 serve reads
	// JEAN2_PUSH_CONTACT). The default is jean2's project page: Apple's push service refuses
	// a subject it cannot resolve, such as an address @localhost.
	Contact string
}

const (
	// VAPIDKeyFile holds the server's VAPID key pair in $JEAN2_HOME, made on first use.
	VAPIDKeyFile = "push-vapid.json"
	// pushSubscriptionsKey is the store setting the push subscriptions are kept under, so
	// every instance sharing the database sends to the same browsers.
	pushSubscriptionsKey = "push.subscriptions"
	// maxPushSubscriptions bounds the list: each notification is one request per entry.
	maxPushSubscriptions = 64
	// maxPushTitle is the longest session title a notification carries, in characters.
	maxPushTitle = 80
	// DefaultPushContact is the VAPID subject when PushOptions.Contact is empty.
	DefaultPushContact = "https://github.com/jean2/jean2"
	// pushQueue is how many notifications may wait to be sent; more are dropped (logged).
	pushQueue = 64
)

// Kinds of notification, as a push payload's kind says them.
const (
	PushDone   = "done"   // a turn ended
	PushFailed = "failed" // a turn failed
	PushAsk    = "ask"    // a question waits for a person
)

// PushPayload is what a notification carries, encrypted for the browser: no message
// content, only the session's title (cut to 80 characters).
type PushPayload struct {
	SessionID   string `json:"sessionId"`
	WorkspaceID string `json:"workspaceId"`
	Kind        string `json:"kind"`
	Title       string `json:"title"`
	// URL is the client's address of the session, which a click on the notification opens.
	URL string `json:"url"`
}

// PushSubscription is a browser's PushSubscription.toJSON() as the client sends it.
type PushSubscription struct {
	Endpoint       string    `json:"endpoint"`
	ExpirationTime *int64    `json:"expirationTime,omitempty"`
	Keys           PushKeys  `json:"keys"`
	CreatedAt      time.Time `json:"createdAt,omitzero"`
}

// PushKeys are the browser's P-256 public key and authentication secret, base64url.
type PushKeys struct {
	P256dh string `json:"p256dh"`
	Auth   string `json:"auth"`
}

// pushNotice is one notification to send: which session and why.
type pushNotice struct {
	sessionID, kind string
}

// pusher owns the VAPID keys, the subscriptions and the queue of notifications to send.
type pusher struct {
	home    string
	db      *store.DB
	client  *http.Client
	contact string
	log     *slog.Logger
	queue   chan pushNotice

	keysMu sync.Mutex
	keys   *vapidKeys // nil until first used

	subsMu sync.Mutex // serializes the read-modify-write of the subscription list
}

type vapidKeys struct {
	PublicKey  string `json:"publicKey"`
	PrivateKey string `json:"privateKey"`
}

func newPusher(home string, db *store.DB, opts PushOptions, log *slog.Logger) *pusher {
	p := &pusher{home: home, db: db, client: opts.Client, contact: opts.Contact, log: log, queue: make(chan pushNotice, pushQueue)}
	if p.client == nil {
		p.client = &http.Client{Timeout: 30 * time.Second}
	}
	// The library adds "mailto:" to anything that is not an https URL.
	p.contact = strings.TrimPrefix(strings.TrimSpace(p.contact), "mailto:")
	if p.contact == "" {
		p.contact = DefaultPushContact
	}
	return p
}

// vapid returns the server's VAPID keys, making and keeping them on first use. Written to
// a temporary file and linked into place, so two processes sharing the home agree on one
// pair and none reads a half-written file.
func (p *pusher) vapid() (vapidKeys, error) {
	p.keysMu.Lock()
	defer p.keysMu.Unlock()
	if p.keys != nil {
		return *p.keys, nil
	}
	path := filepath.Join(p.home, VAPIDKeyFile)
	keys, err := readVAPID(path)
	if errors.Is(err, os.ErrNotExist) {
		keys, err = makeVAPID(path)
	}
	if err != nil {
		return vapidKeys{}, err
	}
	p.keys = &keys
	return keys, nil
}

func readVAPID(path string) (vapidKeys, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return vapidKeys{}, err
	}
	var k vapidKeys
	if err := json.Unmarshal(data, &k); err != nil || k.PublicKey == "" || k.PrivateKey == "" {
		return vapidKeys{}, fmt.Errorf("read VAPID keys %s: not a key pair (remove the file to make a new one; browsers then subscribe again): %v", path, err)
	}
	return k, nil
}

func makeVAPID(path string) (vapidKeys, error) {
	var k vapidKeys
	var err error
	if k.PrivateKey, k.PublicKey, err = webpush.GenerateVAPIDKeys(); err != nil {
		return k, fmt.Errorf("make VAPID keys: %w", err)
	}
	data, _ := json.Marshal(k)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".push-vapid-*")
	if err != nil {
		return k, fmt.Errorf("write VAPID keys %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	// CreateTemp makes the file 0600: only the server's user reads the private key.
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return k, fmt.Errorf("write VAPID keys %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return k, fmt.Errorf("write VAPID keys %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); errors.Is(err, os.ErrExist) {
		return readVAPID(path) // another process made them first
	} else if err != nil {
		return k, fmt.Errorf("write VAPID keys %s: %w", path, err)
	}
	return k, nil
}

// subscriptions reads the stored list (none yet: empty).
func (p *pusher) subscriptions(ctx context.Context) ([]PushSubscription, error) {
	raw, err := p.db.Setting(ctx, pushSubscriptionsKey)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read push subscriptions: %w", err)
	}
	var subs []PushSubscription
	if err := json.Unmarshal(raw, &subs); err != nil {
		return nil, fmt.Errorf("read push subscriptions: %w", err)
	}
	return subs, nil
}

// edit changes the stored list with change, under the pusher's lock.
func (p *pusher) edit(ctx context.Context, change func([]PushSubscription) ([]PushSubscription, error)) error {
	p.subsMu.Lock()
	defer p.subsMu.Unlock()
	subs, err := p.subscriptions(ctx)
	if err != nil {
		return err
	}
	if subs, err = change(subs); err != nil {
		return err
	}
	data, err := json.Marshal(subs)
	if err != nil {
		return fmt.Errorf("keep push subscriptions: %w", err)
	}
	if err := p.db.PutSetting(ctx, pushSubscriptionsKey, data); err != nil {
		return fmt.Errorf("keep push subscriptions: %w", err)
	}
	return nil
}

// drop removes the subscription of endpoint, if it is listed.
func (p *pusher) drop(ctx context.Context, endpoint string) (found bool, err error) {
	err = p.edit(ctx, func(subs []PushSubscription) ([]PushSubscription, error) {
		out := subs[:0]
		for _, s := range subs {
			if s.Endpoint == endpoint {
				found = true
				continue
			}
			out = append(out, s)
		}
		return out, nil
	})
	return found, err
}

// enqueue hands a notification to the sender without waiting (it is called under a
// session's publish lock); a full queue drops it.
func (p *pusher) enqueue(n pushNotice) {
	select {
	case p.queue <- n:
	default:
		p.log.Warn("push: too many notifications waiting; one dropped", "session", n.sessionID, "kind", n.kind)
	}
}

// run sends queued notifications until ctx ends.
func (p *pusher) run(ctx context.Context) {
	for {
		select {
		case n := <-p.queue:
			p.send(ctx, n)
		case <-ctx.Done():
			return
		}
	}
}

// send delivers one notification to every subscription; a subscription its push service
// says is gone (404, 410) is dropped.
func (p *pusher) send(ctx context.Context, n pushNotice) {
	subs, err := p.subscriptions(ctx)
	if err != nil || len(subs) == 0 {
		if err != nil {
			p.log.Warn("push: no notification sent", "session", n.sessionID, "error", err)
		}
		return
	}
	payload, err := p.payload(ctx, n)
	if err != nil {
		p.log.Warn("push: no notification sent", "session", n.sessionID, "error", err)
		return
	}
	keys, err := p.vapid()
	if err != nil {
		p.log.Warn("push: no notification sent", "session", n.sessionID, "error", err)
		return
	}
	for _, sub := range subs {
		status, err := p.deliver(ctx, payload, sub, keys, n.sessionID)
		switch {
		case err != nil:
			p.log.Warn("push: send failed", "endpoint", endpointHost(sub.Endpoint), "error", err)
		case status == http.StatusNotFound || status == http.StatusGone:
			if _, err := p.drop(ctx, sub.Endpoint); err != nil {
				p.log.Warn("push: drop a subscription that is gone", "endpoint", endpointHost(sub.Endpoint), "error", err)
			}
		case status >= 300:
			p.log.Warn("push: the push service refused a notification", "endpoint", endpointHost(sub.Endpoint), "status", status)
		}
	}
}

// deliver encrypts and posts one notification; it returns the push service's status.
func (p *pusher) deliver(ctx context.Context, payload []byte, sub PushSubscription, keys vapidKeys, sessionID string) (int, error) {
	// A newer notification of the same session replaces one the push service still holds.
	topic := sha256.Sum256([]byte(sessionID))
	resp, err := webpush.SendNotificationWithContext(ctx, payload,
		&webpush.Subscription{Endpoint: sub.Endpoint, Keys: webpush.Keys{P256dh: sub.Keys.P256dh, Auth: sub.Keys.Auth}},
		&webpush.Options{HTTPClient: p.client, Subscriber: p.contact, VAPIDPublicKey: keys.PublicKey, VAPIDPrivateKey: keys.PrivateKey,
			TTL: 24 * 60 * 60, Urgency: webpush.UrgencyHigh, Topic: base64.RawURLEncoding.EncodeToString(topic[:24])})
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}

// payload is the notification's JSON: the session's ids, why, and its title cut short.
func (p *pusher) payload(ctx context.Context, n pushNotice) ([]byte, error) {
	ses, err := p.db.Session(ctx, n.sessionID)
	if err != nil {
		return nil, fmt.Errorf("read session %s for its notification: %w", n.sessionID, err)
	}
	title := strings.TrimSpace(ses.Title)
	if utf8.RuneCountInString(title) > maxPushTitle {
		title = string([]rune(title)[:maxPushTitle-1]) + "…"
	}
	return json.Marshal(PushPayload{SessionID: ses.ID, WorkspaceID: ses.WorkspaceID, Kind: n.kind, Title: title,
		URL: "/#/s/" + url.PathEscape(ses.ID)})
}

// endpointHost names a push service in the log without the subscription's secret path.
func endpointHost(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "(unparsable endpoint)"
	}
	return u.Host
}

// pushKind says which notification, if any, a session's events call for.
func pushKind(evs []store.Event) string {
	kind := ""
	for _, ev := range evs {
		switch ev.Type {
		case harness.EventTurnFinished:
			var fin harness.TurnFinished
			if json.Unmarshal(ev.Payload, &fin) != nil {
				continue
			}
			switch fin.Reason {
			case harness.ReasonStopped:
				// Someone pressed Stop: they know.
			case harness.ReasonError, harness.ReasonInterrupted:
				kind = PushFailed
			default:
				kind = PushDone
			}
		case hub.EventAskPending:
			kind = PushAsk
		}
	}
	return kind
}

// attachedOtherInstance reports whether a client of another instance follows the session.
func (s *Server) attachedOtherInstance(sessionID string) bool {
	elsewhere := s.attachedElsewhere()
	return elsewhere != nil && elsewhere(sessionID)
}

// notifyUnwatched is the hub's Unwatched hook: a turn that ended or failed, or a question
// asked, that no client of this instance received becomes a notification, unless a client
// of another instance follows the session.
func (s *Server) notifyUnwatched(sessionID string, evs []store.Event) {
	if sessionID == "" || s.push == nil {
		return
	}
	if kind := pushKind(evs); kind != "" && !s.attachedOtherInstance(sessionID) {
		s.push.enqueue(pushNotice{sessionID: sessionID, kind: kind})
	}
}

// notifyLeftWaiting runs when a client's socket of the session closes: if it was the last
// one and questions still wait, the person who left is told.
func (s *Server) notifyLeftWaiting(sessionID string) {
	if sessionID == "" || s.push == nil || s.hub == nil || s.ctx.Err() != nil {
		return
	}
	if s.hub.Attached(sessionID) == 0 && len(s.hub.Pending(sessionID)) > 0 && !s.attachedOtherInstance(sessionID) {
		s.push.enqueue(pushNotice{sessionID: sessionID, kind: PushAsk})
	}
}

// startPush makes the pusher and starts its sender, which ends with the server.
func (s *Server) startPush() {
	s.push = newPusher(s.cfg.Host.Layout.Home, s.db, s.cfg.Push, s.log)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.push.run(s.ctx)
	}()
}

func (s *Server) pushRoutes(route func(string, handlerFunc)) {
	route("GET /api/push/key", s.getPushKey)
	route("GET /api/push/subscriptions", s.listPushSubscriptions)
	route("POST /api/push/subscriptions", s.postPushSubscription)
	route("DELETE /api/push/subscriptions", s.deletePushSubscription)
}

// getPushKey answers the VAPID public key a browser subscribes with
// (applicationServerKey).
func (s *Server) getPushKey(w http.ResponseWriter, r *http.Request) error {
	keys, err := s.push.vapid()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"publicKey": keys.PublicKey})
	return nil
}

// listPushSubscriptions lists the subscribed browsers by endpoint and date (not their keys).
func (s *Server) listPushSubscriptions(w http.ResponseWriter, r *http.Request) error {
	subs, err := s.push.subscriptions(r.Context())
	if err != nil {
		return err
	}
	type listed struct {
		Endpoint  string    `json:"endpoint"`
		CreatedAt time.Time `json:"createdAt"`
	}
	out := make([]listed, 0, len(subs))
	for _, sub := range subs {
		out = append(out, listed{Endpoint: sub.Endpoint, CreatedAt: sub.CreatedAt})
	}
	writeJSON(w, http.StatusOK, map[string]any{"subscriptions": out})
	return nil
}

func (s *Server) postPushSubscription(w http.ResponseWriter, r *http.Request) error {
	var sub PushSubscription
	if err := decodeBody(w, r, &sub); err != nil {
		return err
	}
	if err := checkPushSubscription(sub); err != nil {
		return err
	}
	sub.CreatedAt = time.Now().UTC()
	sub.ExpirationTime = nil
	status := http.StatusCreated
	err := s.push.edit(r.Context(), func(subs []PushSubscription) ([]PushSubscription, error) {
		for i := range subs {
			if subs[i].Endpoint == sub.Endpoint {
				subs[i] = sub // the browser's keys may have changed
				status = http.StatusOK
				return subs, nil
			}
		}
		if len(subs) >= maxPushSubscriptions {
			return nil, errorf(http.StatusConflict, codeConflict, "already %d push subscriptions: remove one first (DELETE /api/push/subscriptions?endpoint=…)", maxPushSubscriptions)
		}
		return append(subs, sub), nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, status, map[string]any{"endpoint": sub.Endpoint})
	return nil
}

func (s *Server) deletePushSubscription(w http.ResponseWriter, r *http.Request) error {
	endpoint := r.URL.Query().Get("endpoint")
	if endpoint == "" {
		return badRequest("name the subscription to remove: ?endpoint=<its endpoint URL>")
	}
	found, err := s.push.drop(r.Context(), endpoint)
	if err != nil {
		return err
	}
	if !found {
		return notFound("no push subscription has the endpoint %s", endpoint)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// checkPushSubscription refuses what could not be a browser's subscription: the server
// will post to the endpoint, so it must be an https address, and the keys must be a P-256
// point and a 16-byte secret.
func checkPushSubscription(sub PushSubscription) error {
	u, err := url.Parse(sub.Endpoint)
	if err != nil || u.Scheme != "https" || u.Host == "" || len(sub.Endpoint) > 2048 {
		return badRequest("endpoint must be the push service's https:// address (at most 2048 characters), not %q", sub.Endpoint)
	}
	pub, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(sub.Keys.P256dh, "="))
	if err == nil {
		_, err = ecdh.P256().NewPublicKey(pub)
	}
	if err != nil {
		return badRequest("keys.p256dh must be the browser's P-256 public key, base64url: %v", err)
	}
	auth, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(sub.Keys.Auth, "="))
	if err != nil || len(auth) != 16 {
		return badRequest("keys.auth must be the browser's 16-byte secret, base64url")
	}
	return nil
}

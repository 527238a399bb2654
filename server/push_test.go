package server

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/provider/providertest"
)

// pushService stands in for a browser vendor's push service: it records every request and
// answers 201, or 410 on /gone (a subscription the browser dropped).
type pushService struct {
	ts   *httptest.Server
	got  chan pushRequest
	mu   sync.Mutex
	seen int
}

type pushRequest struct {
	Path   string
	Header http.Header
	Body   []byte
}

func newPushService(t *testing.T) *pushService {
	p := &pushService{got: make(chan pushRequest, 16)}
	p.ts = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.seen++
		p.mu.Unlock()
		if r.URL.Path == "/gone" {
			w.WriteHeader(http.StatusGone)
			return
		}
		p.got <- pushRequest{Path: r.URL.Path, Header: r.Header.Clone(), Body: body}
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(p.ts.Close)
	return p
}

// next waits for the next notification that reached a live subscription.
func (p *pushService) next(t *testing.T) pushRequest {
	t.Helper()
	select {
	case r := <-p.got:
		return r
	case <-time.After(60 * time.Second):
		t.Fatal("no push request reached the push service within 60 s")
		return pushRequest{}
	}
}

// browserKeys is what a browser makes when it subscribes: a P-256 key pair and a secret.
type browserKeys struct {
	priv *ecdh.PrivateKey
	auth []byte
}

func newBrowserKeys(t *testing.T) browserKeys {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	return browserKeys{priv: priv, auth: auth}
}

func (k browserKeys) subscription(endpoint string) map[string]any {
	return map[string]any{"endpoint": endpoint, "expirationTime": nil, "keys": map[string]string{
		"p256dh": base64.RawURLEncoding.EncodeToString(k.priv.PublicKey().Bytes()),
		"auth":   base64.RawURLEncoding.EncodeToString(k.auth)}}
}

// decrypt opens an aes128gcm body encrypted for the browser (RFC 8291, RFC 8188).
func (k browserKeys) decrypt(t *testing.T, body []byte) []byte {
	t.Helper()
	if len(body) < 21 {
		t.Fatalf("push body of %d bytes has no aes128gcm header", len(body))
	}
	salt, rs, idLen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	serverPub := body[21 : 21+idLen]
	ciphertext := body[21+idLen:]
	if idLen != 65 || uint32(len(ciphertext)) > rs {
		t.Fatalf("aes128gcm header: key id of %d bytes, record size %d, ciphertext %d bytes", idLen, rs, len(ciphertext))
	}
	asPub, err := ecdh.P256().NewPublicKey(serverPub)
	if err != nil {
		t.Fatalf("the key id is not a P-256 key: %v", err)
	}
	secret, err := k.priv.ECDH(asPub)
	if err != nil {
		t.Fatal(err)
	}
	info := append(append([]byte("WebPush: info\x00"), k.priv.PublicKey().Bytes()...), serverPub...)
	ikm := must(hkdf.Key(sha256.New, secret, k.auth, string(info), 32))
	cek := must(hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: aes128gcm\x00", 16))
	nonce := must(hkdf.Key(sha256.New, ikm, salt, "Content-Encoding: nonce\x00", 12))
	block, _ := aes.NewCipher(cek)
	gcm, _ := cipher.NewGCM(block)
	plain, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		t.Fatalf("the push body does not decrypt with the subscription's keys: %v", err)
	}
	// The last record ends with 0x02 and zero padding.
	plain = bytes.TrimRight(plain, "\x00")
	if len(plain) == 0 || plain[len(plain)-1] != 2 {
		t.Fatalf("decrypted record lacks the last-record delimiter: %q", plain)
	}
	return plain[:len(plain)-1]
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// checkVAPID checks the request's VAPID Authorization (RFC 8292): the server's public key,
// an ES256 JWT signed by it for the push service's origin, not expired.
func checkVAPID(t *testing.T, h http.Header, publicKey, audience, subject string) {
	t.Helper()
	auth := h.Get("Authorization")
	tok, key, ok := strings.Cut(strings.TrimPrefix(auth, "vapid t="), ", k=")
	if !strings.HasPrefix(auth, "vapid t=") || !ok {
		t.Fatalf("Authorization %q is not vapid t=…, k=…", auth)
	}
	if key != publicKey {
		t.Fatalf("VAPID k=%s, want the server's public key %s", key, publicKey)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("VAPID token %q is not a JWT", tok)
	}
	pubBytes := must(base64.RawURLEncoding.DecodeString(key))
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), pubBytes)
	if err != nil {
		t.Fatal(err)
	}
	sig := must(base64.RawURLEncoding.DecodeString(parts[2]))
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if len(sig) != 64 || !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Fatal("the VAPID token's ES256 signature does not verify with the server's public key")
	}
	var claims struct {
		Aud, Sub string
		Exp      int64
	}
	if err := json.Unmarshal(must(base64.RawURLEncoding.DecodeString(parts[1])), &claims); err != nil {
		t.Fatal(err)
	}
	// Apple's push service refuses an exp more than a day ahead.
	if claims.Aud != audience || claims.Exp < time.Now().Unix() || claims.Exp > time.Now().Add(24*time.Hour).Unix() || claims.Sub != subject {
		t.Fatalf("VAPID claims %+v: want aud %s, exp within a day, sub %s", claims, audience, subject)
	}
}

// pushFixture is a server whose notifications go to a push service stand-in, with one live
// subscription (/live) and one the service says is gone (/gone).
func pushFixture(t *testing.T) (*fixture, *pushService, browserKeys, string) {
	push := newPushService(t)
	f := newFixture(t)
	f.cfg.Push = PushOptions{Client: push.ts.Client(), Contact: "mailto:ops@example.com"}
	f.start()
	// Every reply the tests script goes to their turns, none to naming the session.
	f.call("PATCH", "/api/settings", map[string]any{"autoTitle": false}, 200, nil)
	var key struct{ PublicKey string }
	f.call("GET", "/api/push/key", nil, 200, &key)
	keys := newBrowserKeys(t)
	f.call("POST", "/api/push/subscriptions", keys.subscription(push.ts.URL+"/live"), 201, nil)
	f.call("POST", "/api/push/subscriptions", newBrowserKeys(t).subscription(push.ts.URL+"/gone"), 201, nil)
	return f, push, keys, key.PublicKey
}

// A turn that ends while a client is attached sends nothing; one that ends with nobody
// attached reaches the push service encrypted for the subscription and VAPID-signed, with
// the session's id, the kind and its title; the subscription the service says is gone is
// dropped.
func TestPushWhenNobodyWatches(t *testing.T) {
	f, push, keys, publicKey := pushFixture(t)
	_, ses := f.session()

	// Watched: the socket is attached while the turn runs and ends.
	f.fake.Push(providertest.OpenAIText("test-model", "watched"))
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "hi"}, 202, nil)
	// Closed as soon as the end arrives: the client saw it, so it is not notified.
	sock.until("turn.finished", 60*time.Second)
	sock.close()

	// Unwatched: nobody attached. Notifications are sent in order, so had the first turn
	// made one, it would arrive first.
	f.call("PATCH", "/api/sessions/"+ses.ID, map[string]any{"title": "Fix the login page"}, 200, nil)
	f.fake.Push(providertest.OpenAIText("test-model", "SECRET-ANSWER-TEXT"))
	f.turnAndWait(ses.ID, "SECRET-PROMPT-TEXT")
	req := push.next(t)
	if req.Path != "/live" {
		t.Fatalf("push went to %s, want /live", req.Path)
	}
	if req.Header.Get("Content-Encoding") != "aes128gcm" || req.Header.Get("TTL") == "" {
		t.Fatalf("push headers: Content-Encoding %q, TTL %q", req.Header.Get("Content-Encoding"), req.Header.Get("TTL"))
	}
	checkVAPID(t, req.Header, publicKey, push.ts.URL, "mailto:ops@example.com")
	if bytes.Contains(req.Body, []byte("Fix the login")) {
		t.Fatal("the push body carries the title in clear")
	}
	plain := keys.decrypt(t, req.Body)
	var got PushPayload
	if err := json.Unmarshal(plain, &got); err != nil {
		t.Fatalf("decrypted payload %q: %v", plain, err)
	}
	want := PushPayload{SessionID: ses.ID, WorkspaceID: ses.WorkspaceID, Kind: PushDone, Title: "Fix the login page", URL: "/#/s/" + ses.ID}
	if got != want {
		t.Fatalf("payload %+v, want %+v", got, want)
	}
	if strings.Contains(string(plain), "SECRET") {
		t.Fatalf("the payload carries message content: %s", plain)
	}

	// The gone subscription is dropped; the live one stays.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var list struct{ Subscriptions []struct{ Endpoint string } }
		f.call("GET", "/api/push/subscriptions", nil, 200, &list)
		if len(list.Subscriptions) == 1 && list.Subscriptions[0].Endpoint == push.ts.URL+"/live" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subscriptions after a 410: %+v, want only /live", list.Subscriptions)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A failed turn says so.
	f.fake.Push(providertest.OpenAIError(400, "invalid_request_error", "bad request"))
	f.turnAndWait(ses.ID, "fail")
	if err := json.Unmarshal(keys.decrypt(t, push.next(t).Body), &got); err != nil || got.Kind != PushFailed {
		t.Fatalf("after a failed turn: payload %+v (%v), want kind failed", got, err)
	}
}

// A person who leaves while a question waits is told: the last socket closing with an ask
// pending sends kind "ask"; the answer given later (through the API, nobody attached) lets
// the turn end, which sends "done".
func TestPushWhenLeftWithAQuestionWaiting(t *testing.T) {
	f, push, keys, _ := pushFixture(t)
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_ask", "confirm_it", `{"question":"Ship it?"}`),
		providertest.OpenAIText("test-model", "shipped"),
	)
	sock := f.dial("/api/sessions/"+ses.ID+"/ws", nil)
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "ask me"}, 202, nil)
	pending, _ := sock.until("ask.pending", 60*time.Second)
	var p hub.AskPendingPayload
	mustJSON(t, pending.Payload, &p)
	sock.close()

	var got PushPayload
	if err := json.Unmarshal(keys.decrypt(t, push.next(t).Body), &got); err != nil || got.Kind != PushAsk || got.SessionID != ses.ID {
		t.Fatalf("after leaving with a question waiting: payload %+v (%v), want kind ask", got, err)
	}
	f.call("POST", "/api/sessions/"+ses.ID+"/asks/"+p.Ask.ID, map[string]any{"answer": true}, 200, nil)
	if err := json.Unmarshal(keys.decrypt(t, push.next(t).Body), &got); err != nil || got.Kind != PushDone {
		t.Logf("%s", f.call("GET", "/api/sessions/"+ses.ID+"/events", nil, 200, nil))
		t.Fatalf("after the answer: payload %+v (%v), want kind done", got, err)
	}
}

// The routes: the VAPID key is made once and kept 0600; subscriptions are checked, stored
// once per endpoint and removed; all of it needs the token.
func TestPushRoutes(t *testing.T) {
	f := newFixture(t).start()
	var k1, k2 struct{ PublicKey string }
	f.call("GET", "/api/push/key", nil, 200, &k1)
	f.call("GET", "/api/push/key", nil, 200, &k2)
	if pub := must(base64.RawURLEncoding.DecodeString(k1.PublicKey)); len(pub) != 65 || k1 != k2 {
		t.Fatalf("public keys %q then %q: want one 65-byte P-256 point", k1.PublicKey, k2.PublicKey)
	}
	info, err := os.Stat(filepath.Join(f.home, VAPIDKeyFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("VAPID key file: %v, mode %v; want 0600", err, info)
	}
	// Kept across a restart.
	f.stop()
	f.start()
	f.call("GET", "/api/push/key", nil, 200, &k2)
	if k1 != k2 {
		t.Fatalf("the public key changed across a restart: %s → %s", k1.PublicKey, k2.PublicKey)
	}

	keys := newBrowserKeys(t)
	sub := keys.subscription("https://push.example/abc")
	f.call("POST", "/api/push/subscriptions", sub, 201, nil)
	f.call("POST", "/api/push/subscriptions", sub, 200, nil)
	for name, bad := range map[string]map[string]any{
		"http endpoint": keys.subscription("http://push.example/abc"),
		"bad key":       {"endpoint": "https://push.example/x", "keys": map[string]string{"p256dh": "AAAA", "auth": "AAAAAAAAAAAAAAAAAAAAAA"}},
		"short auth":    {"endpoint": "https://push.example/x", "keys": map[string]string{"p256dh": sub["keys"].(map[string]string)["p256dh"], "auth": "AAAA"}},
	} {
		if status, body := f.request("POST", "/api/push/subscriptions", bad, nil); status != 400 {
			t.Errorf("%s: status %d (%s), want 400", name, status, body)
		}
	}
	if status, _ := f.request("POST", "/api/push/subscriptions", sub, http.Header{"Authorization": {"Bearer wrong"}}); status != 401 {
		t.Errorf("a subscription without the token: status %d, want 401", status)
	}
	if status, _ := f.request("GET", "/api/push/key", nil, http.Header{"Authorization": {"Bearer wrong"}}); status != 401 {
		t.Errorf("the key without the token: status %d, want 401", status)
	}
	var list struct{ Subscriptions []struct{ Endpoint string } }
	f.call("GET", "/api/push/subscriptions", nil, 200, &list)
	if len(list.Subscriptions) != 1 {
		t.Fatalf("subscriptions %+v, want one", list.Subscriptions)
	}
	del := "/api/push/subscriptions?endpoint=" + url.QueryEscape("https://push.example/abc")
	f.call("DELETE", del, nil, 204, nil)
	if status, _ := f.request("DELETE", del, nil, nil); status != 404 {
		t.Errorf("deleting it again: status %d, want 404", status)
	}
}

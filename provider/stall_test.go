package provider_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
)

// A stream that stops sending in the middle of an answer ends after the idle timeout
// with an error that says so (not retried: part of the answer is out); without the
// timeout it would wait for the server's minute-long pause.
func TestStreamStallsMidAnswer(t *testing.T) {
	for _, f := range flavors() {
		t.Run(f.name, func(t *testing.T) {
			srv := f.srv(t)
			srv.Key = testKey
			r := f.text("Hel", "lo")
			cut := len(r.Steps) - 3
			r.Steps = append(r.Steps[:cut:cut], append([]providertest.Step{{Delay: time.Minute}}, r.Steps[cut:]...)...)
			srv.Push(r)
			p, err := provider.New(provider.Config{Name: "stally", Kind: f.kind, BaseURL: srv.BaseURL(), APIKey: testKey, IdleTimeout: time.Second},
				&provider.Options{Retry: provider.Retry{MaxAttempts: 3, BaseDelay: time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			s, err := p.Stream(context.Background(), provider.Request{Model: f.model(), Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			res, err := provider.Collect(s)
			var pe *provider.Error
			if !errors.As(err, &pe) || !pe.Partial || !provider.IsStall(err) || pe.Provider != "stally" ||
				!strings.Contains(err.Error(), "sent nothing for 1s") || !strings.Contains(err.Error(), "stopped in the middle") {
				t.Fatalf("err = %v", err)
			}
			if res.Text != "Hello" {
				t.Fatalf("text before the stall %q", res.Text)
			}
			if waited := time.Since(start); waited > 30*time.Second {
				t.Fatalf("the stall was waited out (%s)", waited)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Fatalf("%d requests: a stalled answer was retried", n)
			}
		})
	}
}

// A server that never sends response headers: the request ends after the idle timeout,
// not retried, with the error naming what was missing. The default timeout is two minutes.
func TestStreamStallsBeforeHeaders(t *testing.T) {
	if provider.DefaultIdleTimeout != 2*time.Minute {
		t.Fatalf("default idle timeout %s", provider.DefaultIdleTimeout)
	}
	requests := make(chan struct{}, 10)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		requests <- struct{}{}
		<-r.Context().Done() // never answers
	}))
	defer ts.Close()
	defer ts.CloseClientConnections()
	for _, kind := range []provider.Kind{provider.KindOpenAI, provider.KindAnthropic} {
		t.Run(string(kind), func(t *testing.T) {
			p, err := provider.New(provider.Config{Name: "mute", Kind: kind, BaseURL: ts.URL + "/v1", APIKey: testKey},
				&provider.Options{IdleTimeout: 300 * time.Millisecond, Retry: provider.Retry{MaxAttempts: 3, BaseDelay: time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Stream(context.Background(), provider.Request{Model: "m", MaxTokens: 10, Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}})
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Partial || !provider.IsStall(err) || !strings.Contains(err.Error(), "not even headers") || pe.Attempts != 1 {
				t.Fatalf("err = %v", err)
			}
			<-requests
			select {
			case <-requests:
				t.Fatal("a stalled request was sent again")
			case <-time.After(100 * time.Millisecond):
			}
		})
	}
}

// The idle timer runs only while the model is waited for: an answer whose pieces each come
// within the timeout, though the whole takes longer, is not cut.
func TestSlowButSteadyStreamIsNotCut(t *testing.T) {
	srv := providertest.NewOpenAI(t)
	b := providertest.NewOpenAIStream("gpt-test")
	for range 10 {
		b.Pause(150 * time.Millisecond).Text("x")
	}
	srv.Push(b.Finish("stop").Usage(1, 10).Done().Reply())
	p, err := provider.New(provider.Config{Name: "steady", Kind: provider.KindOpenAI, BaseURL: srv.BaseURL(), IdleTimeout: time.Second},
		&provider.Options{Retry: provider.Retry{MaxAttempts: 1}})
	if err != nil {
		t.Fatal(err)
	}
	// The whole answer takes about 1.5 s, longer than the 1 s timeout, with no gap above
	// 150 ms.
	s, err := p.Stream(context.Background(), provider.Request{Model: "gpt-test", Messages: []provider.Message{{Role: provider.RoleUser, Text: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := provider.Collect(s)
	if err != nil || res.Text != strings.Repeat("x", 10) {
		t.Fatalf("%q %v", res.Text, err)
	}
}

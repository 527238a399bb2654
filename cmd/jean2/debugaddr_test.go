package main

import (
	"bytes"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// JEAN2_DEBUG_ADDR serves Go's profiles on a loopback address only: they carry no token.
func TestProfilingListensOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:6060", ":0", "localhost"} {
		var errb bytes.Buffer
		e := env{stderr: &errb, getenv: func(k string) string { return map[string]string{"JEAN2_DEBUG_ADDR": addr}[k] }}
		if stop, err := startProfiling(e, "jean2 serve"); err == nil {
			stop()
			t.Errorf("JEAN2_DEBUG_ADDR=%s was taken", addr)
		}
	}
	var errb bytes.Buffer
	e := env{stderr: &errb, getenv: func(k string) string { return map[string]string{"JEAN2_DEBUG_ADDR": "127.0.0.1:0"}[k] }}
	stop, err := startProfiling(e, "jean2 serve")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m := regexp.MustCompile(`profiling on (http://\S+)/debug/pprof/`).FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no address printed: %q", errb.String())
	}
	resp, err := http.Get(m[1] + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(string(body), "goroutine profile: total ") {
		t.Fatalf("the goroutine profile reads %.200q", body)
	}
	var none bytes.Buffer
	if stop, err := startProfiling(env{stderr: &none, getenv: func(string) string { return "" }}, "jean2 serve"); err != nil || none.Len() != 0 {
		t.Fatalf("unset: %v, printed %q", err, none.String())
	} else {
		stop()
	}
}

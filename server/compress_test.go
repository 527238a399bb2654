package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestJSONCompressed: an API answer goes gzipped to a client that accepts gzip (with Vary:
// Accept-Encoding, and far smaller than its JSON), and as plain JSON to one that does not.
func TestJSONCompressed(t *testing.T) {
	f := newFixture(t).start()
	ws, _ := f.session()
	// A list worth compressing: repetitive text, as conversations and tool results are.
	for i := range 40 {
		f.call("POST", "/api/workspaces/"+ws.ID+"/sessions", map[string]any{"title": fmt.Sprintf("session %d: %s", i, strings.Repeat("the quick brown fox ", 5))}, 201, nil)
	}
	path := "/api/workspaces/" + ws.ID + "/sessions"
	get := func(accept string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest("GET", f.ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range f.withToken(nil) {
			req.Header[k] = v
		}
		// Set by hand: the transport then hands back the bytes as sent, not decompressed.
		if accept != "" {
			req.Header.Set("Accept-Encoding", accept)
		}
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, data
	}

	plainResp, plain := get("")
	if ce := plainResp.Header.Get("Content-Encoding"); ce != "" || !json.Valid(plain) {
		t.Fatalf("without Accept-Encoding: Content-Encoding %q, valid JSON %v", ce, json.Valid(plain))
	}
	zResp, z := get("gzip, deflate, br")
	if ce := zResp.Header.Get("Content-Encoding"); ce != "gzip" {
		t.Fatalf("with Accept-Encoding gzip: Content-Encoding %q, want gzip (%d bytes sent)", ce, len(z))
	}
	if !strings.Contains(zResp.Header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("Vary is %q, want Accept-Encoding in it", zResp.Header.Get("Vary"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(unzipped, plain) {
		t.Errorf("the gzipped answer unzips to %d bytes, the plain one is %d bytes", len(unzipped), len(plain))
	}
	t.Logf("sessions: %d bytes as JSON, %d gzipped", len(plain), len(z))
	if len(z)*3 > len(plain) {
		t.Errorf("gzipped %d bytes of %d: want under a third", len(z), len(plain))
	}
}

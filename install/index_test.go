package install

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/host"
)

func TestParseIndex(t *testing.T) {
	for _, bad := range []string{`{"tools": []}`, `{"version": 2, "tools": []}`, `{"version": "3"}`, `{"version": 4}`} {
		_, err := ParseIndex([]byte(bad), "idx.json")
		if err == nil || !strings.Contains(err.Error(), "this jean2 reads version 3 indexes only") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := ParseIndex([]byte(`[1,2]`), "idx.json"); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("array: %v", err)
	}
	idx, err := ParseIndex([]byte(`{"version": 3, "registry": {"baseUrl": "https://tools.example/r/"}, "tools": [
		{"name": "web-search", "description": "d", "version": "1.2.0", "recommended": true, "sha256": "`+strings.Repeat("AB", 32)+`",
		 "envVars": [{"name": "API_KEY", "required": true, "sensitive": true}]},
		{"name": "../escape", "description": "d"},
		{"name": "bad-version", "description": "d", "version": "one"},
		{"name": "bad-sum", "description": "d", "sha256": "xyz"},
		{"name": "web-search", "description": "again"},
		{"name": "fetch", "description": "d", "category": "web"},
		"not an object"
	]}`), "https://tools.example/index.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := idx.Names(); !slices.Equal(got, []string{"fetch", "web-search"}) {
		t.Fatalf("names %v", got)
	}
	if len(idx.Problems) != 5 {
		t.Errorf("problems %q", idx.Problems)
	}
	ws, _ := idx.Tool("web-search")
	if ws.SHA256 != strings.Repeat("ab", 32) || !ws.EnvVars[0].Required || !slices.Equal(idx.Recommended(), []string{"web-search"}) {
		t.Errorf("web-search %+v", ws)
	}
	loc, err := idx.ArchiveLocation(ws)
	if err != nil || loc != "https://tools.example/r/web-search/1.2.0.tar.gz" {
		t.Errorf("location %q %v", loc, err)
	}
	f, _ := idx.Tool("fetch")
	if loc, _ := idx.ArchiveLocation(f); loc != "https://tools.example/r/fetch/latest.tar.gz" {
		t.Errorf("no version: %q", loc)
	}

	// Without a base URL the archives sit beside the index; a relative template too.
	for _, c := range []struct{ index, location, want string }{
		{`{"version": 3, "tools": [{"name": "t", "description": "d", "version": "1.0.0"}]}`, "http://127.0.0.1/x/index.json", "http://127.0.0.1/x/t/1.0.0.tar.gz"},
		{`{"version": 3, "registry": {"urlTemplate": "pkgs/{name}-{version}.zip"}, "tools": [{"name": "t", "description": "d", "version": "1.0.0"}]}`, "http://127.0.0.1/x/index.json", "http://127.0.0.1/x/pkgs/t-1.0.0.zip"},
		{`{"version": 3, "registry": {"baseUrl": "archives"}, "tools": [{"name": "t", "description": "d", "version": "1.0.0"}]}`, "/srv/idx/index.json", "/srv/idx/archives/t/1.0.0.tar.gz"},
		{`{"version": 3, "registry": {"baseUrl": "/abs/dir"}, "tools": [{"name": "t", "description": "d"}]}`, "/srv/idx/index.json", "/abs/dir/t/latest.tar.gz"},
		{`{"version": 3, "registry": {"baseUrl": "file:///abs/dir"}, "tools": [{"name": "t", "description": "d"}]}`, "/srv/idx/index.json", "/abs/dir/t/latest.tar.gz"},
	} {
		idx, err := ParseIndex([]byte(c.index), c.location)
		if err != nil {
			t.Fatal(err)
		}
		got, err := idx.ArchiveLocation(idx.Tools[0])
		if err != nil || got != c.want {
			t.Errorf("%s at %s: %q %v; want %q", c.index, c.location, got, err, c.want)
		}
	}
	idx, _ = ParseIndex([]byte(`{"version": 3, "registry": {"baseUrl": "x", "urlTemplate": "{baseUrl}/{tool}.tgz"}, "tools": [{"name": "t", "description": "d"}]}`), "/i.json")
	if _, err := idx.ArchiveLocation(idx.Tools[0]); err == nil || !strings.Contains(err.Error(), "placeholder") {
		t.Errorf("unknown placeholder: %v", err)
	}
}

func TestIndexLocation(t *testing.T) {
	home := t.TempDir()
	l := host.Layout{Home: home}
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }

	if loc, err := IndexLocation(getenv, l); err != nil || loc != DefaultIndexURL {
		t.Fatalf("nothing configured: %q %v; want the default index", loc, err)
	}
	if err := os.WriteFile(ConfigFile(l), []byte(`{"other": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if loc, err := IndexLocation(getenv, l); err != nil || loc != DefaultIndexURL {
		t.Fatalf("config without toolRegistryUrl: %q %v; want the default index", loc, err)
	}
	if err := os.WriteFile(ConfigFile(l), []byte(`{"toolRegistryUrl": ""}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if loc, err := IndexLocation(getenv, l); err != nil || loc != "" {
		t.Fatalf(`"toolRegistryUrl": "": %q %v; want no index`, loc, err)
	}
	if err := os.WriteFile(ConfigFile(l), []byte(`{"toolRegistryUrl": "https://tools.example/index.json", "other": 1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if loc, err := IndexLocation(getenv, l); err != nil || loc != "https://tools.example/index.json" {
		t.Fatalf("config: %q %v", loc, err)
	}
	env["JEAN2_TOOL_REGISTRY_URL"] = "file:///srv/index.json"
	if loc, err := IndexLocation(getenv, l); err != nil || loc != "/srv/index.json" {
		t.Fatalf("env wins: %q %v", loc, err)
	}
	env["JEAN2_TOOL_REGISTRY_URL"] = "rel/index.json"
	wd, _ := os.Getwd()
	if loc, err := IndexLocation(getenv, l); err != nil || loc != filepath.Join(wd, "rel/index.json") {
		t.Fatalf("relative: %q %v", loc, err)
	}
	env["JEAN2_TOOL_REGISTRY_URL"] = "ftp://x/index.json"
	if _, err := IndexLocation(getenv, l); err == nil || !strings.Contains(err.Error(), "only http, https and file") {
		t.Fatalf("ftp: %v", err)
	}
	delete(env, "JEAN2_TOOL_REGISTRY_URL")
	_ = os.WriteFile(ConfigFile(l), []byte(`{"toolRegistryUrl": `), 0o600)
	if _, err := IndexLocation(getenv, l); err == nil || !strings.Contains(err.Error(), "config.json is not valid JSON") {
		t.Fatalf("malformed config: %v", err)
	}
}

// An index on disk with its archives beside it (the form tests and mirrors use), and
// --recommended's list.
func TestInstallFromLocalIndex(t *testing.T) {
	dir := t.TempDir()
	archive := tarGz(t, files("", greetTool("1.0.0")))
	writeTree(t, dir, map[string]string{
		"archives/greet/1.0.0.tar.gz": string(archive),
		"index.json":                  fmt.Sprintf(`{"version": 3, "registry": {"baseUrl": "archives"}, "tools": [{"name": "greet", "description": "d", "version": "1.0.0", "recommended": true, "sha256": %q}]}`, sum(archive)),
	})
	e := newEnv(t, envOptions{index: filepath.Join(dir, "index.json")})
	idx, err := e.in.LoadIndex(context.Background())
	if err != nil || !slices.Equal(idx.Recommended(), []string{"greet"}) {
		t.Fatalf("%v %v", idx, err)
	}
	res, err := e.in.InstallFromIndex(context.Background(), idx, "greet")
	if err != nil || res.Verified != "index" || res.Kind != KindIndex {
		t.Fatalf("%+v %v", res, err)
	}
}

func TestDownloadLimitsAndRedirects(t *testing.T) {
	srv := newServer(t)
	archive := tarGz(t, files("", greetTool("1.0.0")))
	srv.put("/a.tar.gz", archive)
	for i := range 12 {
		next := fmt.Sprintf("/hop%d", i+1)
		if i == 11 {
			next = "/a.tar.gz"
		}
		srv.handle(fmt.Sprintf("/hop%d", i), func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, next, http.StatusFound) })
	}
	srv.handle("/chunked-big", func(w http.ResponseWriter, r *http.Request) {
		// No Content-Length: the cap must hold while streaming.
		for range 100 {
			_, _ = w.Write(bytes.Repeat([]byte("x"), 1024))
			w.(http.Flusher).Flush()
		}
	})
	srv.handle("/stall", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		_, _ = w.Write([]byte("x"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	e := newEnv(t, envOptions{limits: Limits{MaxDownload: 50 << 10, IdleTimeout: 300 * time.Millisecond}})
	ctx := context.Background()
	var buf bytes.Buffer
	fetch := func(path string) error {
		buf.Reset()
		_, err := e.in.fetch(ctx, srv.URL+path, &buf, fetchOptions{limit: e.in.limits.MaxDownload, what: "archive"})
		return err
	}
	// Ten redirects are followed; eleven are not.
	if err := fetch("/hop2"); err != nil || !bytes.Equal(buf.Bytes(), archive) {
		t.Fatalf("10 redirects: %v", err)
	}
	if err := fetch("/hop1"); err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Fatalf("11 redirects: %v", err)
	}
	srv.put("/big", bytes.Repeat([]byte("x"), 60<<10))
	if err := fetch("/big"); err == nil || !strings.Contains(err.Error(), "more than the limit of 51200") {
		t.Fatalf("Content-Length over the cap: %v", err)
	}
	if err := fetch("/chunked-big"); err == nil || !strings.Contains(err.Error(), "larger than the limit of 51200") || buf.Len() > 51200 {
		t.Fatalf("stream over the cap: %v (%d bytes kept)", err, buf.Len())
	}
	start := time.Now()
	if err := fetch("/stall"); err == nil || !strings.Contains(err.Error(), "no data for 300ms") || time.Since(start) > 4*time.Second {
		t.Fatalf("stall: %v after %s", err, time.Since(start))
	}
	if err := fetch("/missing"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("404: %v", err)
	}
	if _, err := e.in.fetch(ctx, "ftp://127.0.0.1/x", &buf, fetchOptions{limit: 1}); err == nil || !strings.Contains(err.Error(), "not an http or https URL") {
		t.Fatalf("ftp: %v", err)
	}

	// From https down to plain http is refused.
	plain := srv.URL
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain+"/a.tar.gz", http.StatusFound)
	}))
	defer tlsSrv.Close()
	client := tlsSrv.Client()
	client.CheckRedirect = checkRedirect
	e.in.client = client
	if _, err := e.in.fetch(ctx, tlsSrv.URL+"/x", &buf, fetchOptions{limit: 1 << 20}); err == nil || !strings.Contains(err.Error(), "from https to plain http") {
		t.Fatalf("downgrade: %v", err)
	}
}

func TestParseSumFile(t *testing.T) {
	d := strings.Repeat("a1", 32)
	for _, in := range []string{d, d + "\n", d + "  tool.tar.gz\n", d + " *tool.tar.gz", strings.ToUpper(d)} {
		if got, err := parseSumFile([]byte(in)); err != nil || got != d {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	for _, in := range []string{"", "  \n", "abc tool.tar.gz", "<html>not found</html>"} {
		if _, err := parseSumFile([]byte(in)); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestCompareWithIndex(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	idx := &Index{Location: "i.json", Tools: []IndexTool{
		{Name: "semver", Version: "1.10.0"},
		{Name: "pre", Version: "2.0.0-rc.2"},
		{Name: "same-sum", SHA256: a},
		{Name: "new-sum", SHA256: b},
		{Name: "nothing"},
	}}
	cases := []struct {
		name, installed, recVersion, recSum string
		status                              string
		outdated                            bool
	}{
		{"semver", "1.9.0", "", "", StatusOutdated, true},
		{"semver", "1.10.0", "", "", StatusUpToDate, false},
		{"semver", "1.11.0-beta", "", "", StatusAhead, false},
		{"semver", "", "1.2.0", "", StatusOutdated, true}, // no version in the folder: the record's
		{"pre", "2.0.0-rc.10", "", "", StatusAhead, false},
		{"pre", "2.0.0-rc.1", "", "", StatusOutdated, true},
		{"same-sum", "", "", a, StatusUpToDate, false},
		{"new-sum", "", "", a, StatusOutdated, true},
		{"nothing", "1.0.0", "", a, StatusUnknown, false},
		{"gone", "1.0.0", "", "", StatusNotInIndex, false},
	}
	for _, c := range cases {
		dir := t.TempDir()
		if c.installed != "" {
			writeTree(t, dir, map[string]string{"VERSION": c.installed})
		}
		entry, ok := idx.Tool(c.name)
		got := compare(tracked{name: c.name, dir: dir, rec: &Record{IndexVersion: c.recVersion, SHA256: c.recSum}}, idx, entry, ok)
		if got.Status != c.status || got.Outdated != c.outdated {
			t.Errorf("%s installed %q: %+v; want %s", c.name, c.installed, got, c.status)
		}
	}
}

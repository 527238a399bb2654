package install

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// jean2Layout serves tools the way jean2's own releases are laid out: an index in the
// "source" format whose entries carry no version, a VERSION file per tool at
// versionUrlTemplate, and each archive (tool.ts, package.json, VERSION at its root) with
// its .sha256 beside it under a release tag "tool-NAME/vVERSION", whose slash the
// template writes as %2F.
func jean2Layout(t *testing.T, srv *server, name, version string) string {
	t.Helper()
	files := namedTool(name, version)
	files["VERSION"] = version + "\n"
	archive := tarGz(t, filesOf(files))
	release := fmt.Sprintf("/releases/download/tool-%s/v%s/%s.tar.gz", name, version, name)
	for path, data := range map[string][]byte{release: archive, release + ".sha256": []byte(sum(archive) + "\n")} {
		srv.handle(path, func(w http.ResponseWriter, r *http.Request) {
			if !strings.Contains(r.URL.EscapedPath(), "tool-"+name+"%2Fv") {
				http.Error(w, "the release tag's slash must stay %2F", http.StatusNotFound)
				return
			}
			_, _ = w.Write(data)
		})
	}
	srv.put("/raw/tools/"+name+"/VERSION", []byte(version+"\n"))
	return srv.put("/tools/repositoryv3.json", []byte(fmt.Sprintf(`{
  "version": 3,
  "format": "source",
  "registry": {
    "baseUrl": %q,
    "urlTemplate": "{baseUrl}/tool-{name}%%2Fv{version}/{name}.tar.gz",
    "versionUrlTemplate": %q
  },
  "metadata": {"categories": {"filesystem": {"label": "Filesystem", "order": 10}},
               "capabilities": {"fs": {"label": "Files"}}},
  "tools": [{"name": %q, "description": "Says hello.", "category": "filesystem",
             "capabilities": ["fs"], "recommended": true, "hasSecurity": false}]
}`, srv.URL+"/releases/download", srv.URL+"/raw/tools/{name}/VERSION", name)))
}

func filesOf(m map[string]string) []entry { return files("", m) }

func TestInstallFromJean2ReleaseLayout(t *testing.T) {
	srv := newServer(t)
	indexURL := jean2Layout(t, srv, "greet", "1.4.2")
	e := newEnv(t, envOptions{index: indexURL})
	res := e.mustInstall("greet", InstallOptions{})
	if res.Kind != KindIndex || !strings.HasSuffix(res.Verified, ".sha256") || res.Version != "1.4.2" {
		t.Fatalf("result %+v; want version 1.4.2 from the VERSION file, verified against the .sha256 beside the archive", res)
	}
	if got := e.servingVersion("greet"); got != "1.4.2" {
		t.Fatalf("serving %q", got)
	}
	if n := srv.hitCount("/raw/tools/greet/VERSION"); n != 1 {
		t.Fatalf("VERSION fetched %d times", n)
	}
}

func TestJean2IndexVersionProblemsAreNamed(t *testing.T) {
	srv := newServer(t)
	indexURL := jean2Layout(t, srv, "greet", "1.4.2")
	e := newEnv(t, envOptions{index: indexURL})
	for _, c := range []struct{ body, want string }{
		{"", "is empty"},
		{"<html>not a version</html>", "not a version"},
	} {
		srv.put("/raw/tools/greet/VERSION", []byte(c.body))
		_, err := e.in.Install(context.Background(), "greet", InstallOptions{})
		if err == nil || !strings.Contains(err.Error(), "/raw/tools/greet/VERSION") || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("VERSION %q: error %v; want it to name the VERSION file and say %q", c.body, err, c.want)
		}
	}
}

// A new VERSION file makes the installed tool outdated, and update installs the new release.
func TestJean2IndexOutdatedAndUpdate(t *testing.T) {
	srv := newServer(t)
	indexURL := jean2Layout(t, srv, "greet", "1.4.2")
	e := newEnv(t, envOptions{index: indexURL})
	e.mustInstall("greet", InstallOptions{})
	ctx := context.Background()
	st, err := e.in.Outdated(ctx)
	if err != nil || len(st) != 1 || st[0].Status != StatusUpToDate || st[0].Latest != "1.4.2" {
		t.Fatalf("outdated after install: %+v %v", st, err)
	}
	jean2Layout(t, srv, "greet", "1.5.0")
	out, err := e.in.Update(ctx, nil)
	if err != nil || len(out) != 1 || !out[0].Updated || out[0].Latest != "1.5.0" {
		t.Fatalf("update: %+v %v", out, err)
	}
	if got := e.servingVersion("greet"); got != "1.5.0" {
		t.Fatalf("serving %q after update", got)
	}
}

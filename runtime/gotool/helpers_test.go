package gotool

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	jean2 "github.com/jean2/jean2"
	"github.com/jean2/jean2/internal/workerproto"
	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/runtime/worker"
	"github.com/jean2/jean2/tool"
)

// shared is what the tests of this package share: the SDK module is written once, and the
// binaries built into the shared cache are reused by every test that builds the same folder.
var shared struct {
	dir      string // removed after the tests
	sdk      string
	cache    string
	tc       Toolchain
	tcErr    error
	powersMu sync.Mutex
	powers   Binary
}

func TestMain(m *testing.M) {
	code := func() int {
		dir, err := os.MkdirTemp("", "gotool-test-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		shared.dir = dir
		shared.cache = filepath.Join(dir, "cache")
		if shared.sdk, err = jean2.WriteSDKModule(filepath.Join(dir, "sdk")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		shared.tc, shared.tcErr = Detect("")
		return m.Run()
	}()
	os.Exit(code)
}

func toolchain(t testing.TB) Toolchain {
	t.Helper()
	if shared.tcErr != nil {
		t.Fatalf("the Go toolchain is needed for these tests: %v", shared.tcErr)
	}
	return shared.tc
}

// serverEnv is the environment a server would pass: offline, so every build must work
// from the module cache.
func serverEnv() []string {
	return []string{"GOPROXY=off", "PATH=/usr/bin:/bin", "HOME=" + shared.dir}
}

func buildOpts(folder, cache string) BuildOptions {
	return BuildOptions{Folder: folder, CacheDir: cache, SDKModule: shared.sdk, Env: serverEnv()}
}

// writeFolder writes files into a new folder named name.
func writeFolder(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	for rel, content := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustBuild(t testing.TB, opts BuildOptions) Binary {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin, err := Build(ctx, toolchain(t), opts)
	if err != nil {
		t.Fatalf("build %s: %v", opts.Folder, err)
	}
	return bin
}

// powersBinary builds testdata/powers once for all tests.
func powersBinary(t testing.TB) Binary {
	t.Helper()
	shared.powersMu.Lock()
	defer shared.powersMu.Unlock()
	if shared.powers.Path == "" {
		folder, err := filepath.Abs("testdata/powers")
		if err != nil {
			t.Fatal(err)
		}
		shared.powers = mustBuild(t, buildOpts(folder, shared.cache))
		t.Logf("built testdata/powers in %v", shared.powers.Duration)
	}
	return shared.powers
}

// newPool makes a pool of workers of a built Go tool.
func newPool(t *testing.T, bin Binary, folder string, opts worker.PoolOptions) *worker.Pool {
	t.Helper()
	if opts.Name == "" {
		opts.Name = filepath.Base(folder)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Init = workerproto.InitializeParams{
		ProtocolVersion: workerproto.Version, Bundle: bin.Path, ToolDir: folder,
		Rules: workerproto.Rules{Blocked: policy.BlockedRoots(), Sensitive: policy.SensitivePatterns(), Home: "/home/tester", Languages: tool.Languages()},
	}
	p := worker.NewPool(NewLauncher(bin, nil, folder), opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("close pool: %v", err)
		}
	})
	return p
}

// hostMsg is one message a call sent to the host.
type hostMsg struct {
	Method string
	Params json.RawMessage
	Notify bool
}

// fakeHost is a CallHandler that records what arrives and answers with answer.
type fakeHost struct {
	mu     sync.Mutex
	got    []hostMsg
	answer func(ctx context.Context, method string, params json.RawMessage) (any, error)
}

func (h *fakeHost) Handle(ctx context.Context, method string, params json.RawMessage) (any, error) {
	h.mu.Lock()
	h.got = append(h.got, hostMsg{Method: method, Params: append(json.RawMessage(nil), params...)})
	answer := h.answer
	h.mu.Unlock()
	if answer == nil {
		return nil, nil
	}
	return answer(ctx, method, params)
}

func (h *fakeHost) Notify(method string, params json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.got = append(h.got, hostMsg{Method: method, Params: append(json.RawMessage(nil), params...), Notify: true})
}

func (h *fakeHost) messages() []hostMsg {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hostMsg(nil), h.got...)
}

func (h *fakeHost) find(method string) []hostMsg {
	var out []hostMsg
	for _, m := range h.messages() {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

func execute(t *testing.T, p *worker.Pool, c worker.Call, h worker.CallHandler) (tool.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw, err := p.Execute(ctx, c, h)
	if err != nil {
		return tool.Result{}, err
	}
	var r tool.Result
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("result %s: %v", raw, err)
	}
	return r, nil
}

func mustExecute(t *testing.T, p *worker.Pool, c worker.Call, h worker.CallHandler) tool.Result {
	t.Helper()
	r, err := execute(t, p, c, h)
	if err != nil {
		t.Fatalf("execute %s: %v", c.ID, err)
	}
	return r
}

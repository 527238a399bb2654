// Package pgtest gives tests a real, throwaway PostgreSQL: each test that calls URL gets a
// fresh, empty database of its own on a cluster that lives as long as the test binary (or
// the whole scripts/test run). No mocks: the cluster is Debian's postgres, started from an
// initdb in a temporary folder and removed at the end.
//
// Use it from a package's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// and in a test:
//
//	url := pgtest.URL(t) // postgres://…/t_…, dropped when the test ends
//
// Where the cluster comes from, in order:
//   - JEAN2_TEST_POSTGRES, the URL of a running cluster's maintenance database (scripts/test
//     starts one for the run and sets it): each test gets its own CREATE DATABASE there;
//   - otherwise Main starts one for the test binary (initdb, then postgres on a free loopback
//     port and a Unix socket in the same temporary folder) and stops it when the tests end;
//   - a test binary without Main starts a cluster per test that asks for one (slow, correct).
//
// When no PostgreSQL can be found or started, URL fails the test with the reason if
// JEAN2_TEST_REQUIRE_POSTGRES=1 (scripts/test sets it) and skips it with the reason
// otherwise, so a developer without Postgres can still run the rest by hand.
//
// Postgres refuses to run as root. Run as root, pgtest runs initdb and postgres as the
// "postgres" system user that Debian's package creates, in a folder that user owns.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables pgtest reads (and Main sets for the tests it runs).
const (
	// EnvURL is the URL of a running cluster's maintenance database to make test databases on.
	EnvURL = "JEAN2_TEST_POSTGRES"
	// EnvRequire, set to 1, turns "no PostgreSQL here" from a skip into a failure.
	EnvRequire = "JEAN2_TEST_REQUIRE_POSTGRES"
	// EnvBin names the folder of initdb and postgres to use (default: found on PATH or in
	// /usr/lib/postgresql/*/bin, the newest).
	EnvBin = "JEAN2_TEST_POSTGRES_BIN"
	// envUnavailable carries, from Main to the tests, why no cluster could be started.
	envUnavailable = "JEAN2_TEST_POSTGRES_UNAVAILABLE"
)

// Main starts a cluster for the test binary unless EnvURL names one already, runs the
// tests and stops the cluster. It returns the exit code for os.Exit. When no cluster can be
// started, the tests still run: those that call URL fail or skip with the reason.
func Main(m *testing.M) int {
	stop := Setup()
	defer stop()
	return m.Run()
}

// Setup is Main for a TestMain that does more: it starts a cluster for the test binary
// (unless EnvURL names one) and returns the function that stops it.
func Setup() (stop func()) {
	if os.Getenv(EnvURL) != "" {
		return func() {}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx)
	if err != nil {
		os.Setenv(envUnavailable, err.Error())
		return func() {}
	}
	os.Setenv(EnvURL, c.URL("postgres"))
	return func() {
		os.Unsetenv(EnvURL)
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest:", err)
		}
	}
}

// URL returns the URL of a fresh, empty database that is dropped when t ends.
func URL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		if reason := os.Getenv(envUnavailable); reason != "" {
			unavailable(t, reason)
		}
		// No Main in this test binary: a cluster for this test alone.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c, err := Start(ctx)
		if err != nil {
			unavailable(t, err.Error())
		}
		t.Cleanup(func() {
			if err := c.Stop(); err != nil {
				t.Errorf("pgtest: %v", err)
			}
		})
		base = c.URL("postgres")
	}
	u, err := CreateDatabase(context.Background(), base)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := DropDatabase(ctx, base, u); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return u
}

func unavailable(t testing.TB, reason string) {
	t.Helper()
	msg := "no PostgreSQL for this test: " + reason +
		" (scripts/setup installs Debian's postgresql package; or set " + EnvURL + " to a server's postgres:// URL)"
	if os.Getenv(EnvRequire) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// CreateDatabase makes a new, empty database with a random name on the server that base
// (a URL of one of its databases) reaches, and returns base pointing at it instead.
func CreateDatabase(ctx context.Context, base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("test database: bad server URL: %w", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	if err := admin(ctx, base, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create test database %s on %s: %w", name, u.Host, err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

// DropDatabase drops the database that dbURL names, from the server that base reaches,
// closing the connections left open to it.
func DropDatabase(ctx context.Context, base, dbURL string) error {
	u, err := url.Parse(dbURL)
	if err != nil {
		return err
	}
	name := strings.TrimPrefix(u.Path, "/")
	if err := admin(ctx, base, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop test database %s: %w", name, err)
	}
	return nil
}

func admin(ctx context.Context, base, stmt string) error {
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, stmt)
	return err
}

// Cluster is a throwaway PostgreSQL server: its data, socket and log live in one temporary
// folder, removed by Stop.
type Cluster struct {
	dir  string
	port int
	bin  string
	cred *identity
	cmd  *exec.Cmd
	exit chan struct{} // closed when postgres has exited
	err  error         // postgres's exit status, once exit is closed
}

// URL is the URL of database name on c, as its superuser "postgres" (no password: the
// cluster trusts local connections).
func (c *Cluster) URL(name string) string {
	return (&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: "127.0.0.1:" + strconv.Itoa(c.port),
		Path: "/" + name, RawQuery: "sslmode=disable"}).String()
}

// Dir is the folder holding the cluster's data ("data"), socket and log ("postgres.log").
func (c *Cluster) Dir() string { return c.dir }

// Start makes and starts a new cluster. Run as root, it runs postgres as the "postgres"
// user.
func Start(ctx context.Context) (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "jean2-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("postgres test cluster: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(dir)
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, cred.uid, cred.gid); err != nil {
			return nil, fmt.Errorf("postgres test cluster: give %s to the postgres user: %w", dir, err)
		}
	}
	data := filepath.Join(dir, "data")
	// --no-sync: a throwaway cluster need not survive a power cut.
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = sysProcAttr(cred, false)
	initdb.Dir = dir
	initdb.Env = pgEnv()
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("postgres test cluster: initdb in %s (%s): %w\n%s", data, bin, err, out)
	}
	// A free port can be taken by someone else between choosing and binding it: try again.
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, fmt.Errorf("postgres test cluster: choose a port: %w", err)
		}
		c, err := startServer(ctx, bin, dir, cred, port)
		if err == nil {
			ok = true
			return c, nil
		}
		lastErr = err
		if ctx.Err() != nil {
			break
		}
	}
	return nil, lastErr
}

func pgEnv() []string {
	return []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "TZ=UTC"}
}

// startServer runs postgres itself (not pg_ctl) as a child of the test binary, so that the
// kernel ends it (Pdeathsig) when a test binary is killed before it could stop it.
func startServer(ctx context.Context, bin, dir string, cred *identity, port int) (*Cluster, error) {
	logPath := filepath.Join(dir, "postgres.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("postgres test cluster: %w", err)
	}
	defer logf.Close()
	if cred != nil {
		_ = logf.Chown(cred.uid, cred.gid)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", filepath.Join(dir, "data"),
		"-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "max_connections=300",
		"-c", "shared_buffers=32MB",
		// Like SQLite's synchronous=NORMAL in the store: a commit survives a crash of the
		// process, not a power cut. The cluster is thrown away anyway.
		"-c", "synchronous_commit=off",
		"-c", "fsync=off",
		"-c", "full_page_writes=off")
	cmd.Dir = dir
	cmd.Env = pgEnv()
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr(cred, true)
	c := &Cluster{dir: dir, port: port, bin: bin, cred: cred, cmd: cmd, exit: make(chan struct{})}
	// Pdeathsig fires when the thread that started the child ends, not the process: a Go
	// thread may end while the test binary goes on (a goroutine that locked it and
	// returned). So the child is started and waited for on a thread locked for the
	// purpose, which lives as long as postgres does.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			close(c.exit)
			return
		}
		started <- nil
		c.err = cmd.Wait()
		close(c.exit)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("postgres test cluster: start %s: %w", cmd.Path, err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := admin(pctx, c.URL("postgres"), "SELECT 1")
		cancel()
		if err == nil {
			return c, nil
		}
		select {
		case <-c.exit:
			return nil, fmt.Errorf("postgres test cluster: postgres exited at start (%v); its log %s:\n%s", c.err, logPath, tail(logPath))
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			c.halt() // the folder is the caller's
			return nil, fmt.Errorf("postgres test cluster: not ready on port %d: %v; its log:\n%s", port, err, tail(logPath))
		}
	}
}

// Halt shuts postgres down (fast shutdown: open sessions are ended) and keeps its data,
// so that Resume brings the same cluster back on the same port: a database outage for a
// test. Connections to it are refused meanwhile.
func (c *Cluster) Halt() { c.halt() }

// Resume starts a halted cluster again on its port and waits until it takes connections.
func (c *Cluster) Resume(ctx context.Context) error {
	select {
	case <-c.exit:
	default:
		return errors.New("postgres test cluster: resume: it is running")
	}
	n, err := startServer(ctx, c.bin, c.dir, c.cred, c.port)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	// The exit status stays with n, whose goroutine writes it; halt only needs exit.
	c.cmd, c.exit = n.cmd, n.exit
	return nil
}

// Stop shuts the cluster down (fast shutdown: open sessions are ended) and removes its folder.
func (c *Cluster) Stop() error {
	c.halt()
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remove postgres test cluster %s: %w", c.dir, err)
	}
	return nil
}

func (c *Cluster) halt() {
	select {
	case <-c.exit:
	default:
		_ = c.cmd.Process.Signal(os.Interrupt)
		select {
		case <-c.exit:
		case <-time.After(30 * time.Second):
			killGroup(c.cmd.Process)
			<-c.exit
		}
	}
}

// findBin finds the folder with initdb and postgres: EnvBin, else on PATH (initdb beside postgres), or
// Debian's /usr/lib/postgresql/<version>/bin, the newest version first.
func findBin() (string, error) {
	if dir := os.Getenv(EnvBin); dir != "" {
		for _, name := range []string{"initdb", "postgres"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				return "", fmt.Errorf("%s=%s: no %s there: %w", EnvBin, dir, name, err)
			}
		}
		return dir, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	vers, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	sort.Slice(vers, func(i, j int) bool { return pgVersion(vers[i]) > pgVersion(vers[j]) })
	for _, p := range vers {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", errors.New("postgres and initdb are neither on PATH nor in /usr/lib/postgresql/*/bin")
}

func pgVersion(binPath string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(binPath))))
	return v
}

// identity is the user postgres runs as.
type identity struct{ uid, gid int }

// credential is who postgres runs as: nil (ourselves) unless we are root, which postgres
// refuses; then the "postgres" system user.
func credential() (*identity, error) {
	if runtime.GOOS == "windows" || os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, postgres needs an unprivileged user to run as, and there is no \"postgres\" user: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("user postgres: %w", err)
	}
	return &identity{uid: uid, gid: gid}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail is the end of the file at path, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}

package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/runtime/gotool"
	"github.com/jean2/jean2/sandbox"
)

// rootTool is a Go tool that tries, with raw system calls, what root's capabilities would
// let it do. Each op reports {value} when it worked or {error} when the kernel refused.
const rootTool = `package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"github.com/jean2/jean2/tool"
)

type Input struct {
	Op   string ` + "`json:\"op\"`" + `
	Path string ` + "`json:\"path,omitempty\"`" + `
	MB   int    ` + "`json:\"mb,omitempty\"`" + `
	Data string ` + "`json:\"data,omitempty\"`" + `
	// socket's arguments
	Domain int ` + "`json:\"domain,omitempty\"`" + `
	Type   int ` + "`json:\"type,omitempty\"`" + `
	Proto  int ` + "`json:\"proto,omitempty\"`" + `
}

type Output struct {
	Value string ` + "`json:\"value,omitempty\"`" + `
	Error string ` + "`json:\"error,omitempty\"`" + `
}

func fail(err error) (Output, error) { return Output{Error: err.Error()}, nil }

func run(ctx context.Context, c *tool.Context, in Input) (Output, error) {
	switch in.Op {
	case "status":
		data, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return fail(err)
		}
		var caps []string
		for _, l := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(l, "Cap") || strings.HasPrefix(l, "NoNewPrivs") || strings.HasPrefix(l, "Uid") {
				caps = append(caps, strings.Join(strings.Fields(l), " "))
			}
		}
		return Output{Value: strings.Join(caps, "\n")}, nil
	case "packet":
		// AF_PACKET, SOCK_RAW, htons(ETH_P_ALL): what sniffs every interface, loopback too.
		fd, err := syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW, 0x0300)
		if err != nil {
			return fail(err)
		}
		syscall.Close(fd)
		return Output{Value: "opened a packet socket"}, nil
	case "socket":
		fd, err := syscall.Socket(in.Domain, in.Type, in.Proto)
		if err != nil {
			return fail(err)
		}
		syscall.Close(fd)
		return Output{Value: "opened"}, nil
	case "vsock":
		// socket(AF_VSOCK) + bind(VMADDR_CID_ANY, VMADDR_PORT_ANY) + listen, with raw calls:
		// syscall has no vsock address.
		fd, err := syscall.Socket(40, syscall.SOCK_STREAM, 0)
		if err != nil {
			return fail(err)
		}
		defer syscall.Close(fd)
		addr := [16]byte{0: 40, 4: 0xff, 5: 0xff, 6: 0xff, 7: 0xff, 8: 0xff, 9: 0xff, 10: 0xff, 11: 0xff}
		if _, _, e := syscall.Syscall(syscall.SYS_BIND, uintptr(fd), uintptr(unsafe.Pointer(&addr[0])), 16); e != 0 {
			return fail(fmt.Errorf("bind: %w", e))
		}
		if err := syscall.Listen(fd, 1); err != nil {
			return fail(fmt.Errorf("listen: %w", err))
		}
		return Output{Value: "listening on vsock"}, nil
	case "interfaces":
		ifs, err := net.Interfaces()
		if err != nil {
			return fail(err)
		}
		var names []string
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		return Output{Value: strings.Join(names, ",")}, nil
	case "fetch":
		res, err := http.Get(in.Path)
		if err != nil {
			return fail(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return Output{Value: fmt.Sprintf("%d %s", res.StatusCode, body)}, nil
	case "rawsocket":
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_TCP)
		if err != nil {
			return fail(err)
		}
		syscall.Close(fd)
		return Output{Value: "opened a raw socket"}, nil
	case "hostname":
		var u syscall.Utsname
		if err := syscall.Uname(&u); err != nil {
			return fail(err)
		}
		var name []byte
		for _, b := range u.Nodename {
			if b == 0 {
				break
			}
			name = append(name, byte(b))
		}
		// The same name again: the attempt is what counts, not a change.
		if err := syscall.Sethostname(name); err != nil {
			return fail(err)
		}
		return Output{Value: "set the hostname"}, nil
	case "mount":
		if err := syscall.Mount("none", in.Path, "tmpfs", 0, "size=1m"); err != nil {
			return fail(err)
		}
		syscall.Unmount(in.Path, syscall.MNT_DETACH)
		return Output{Value: "mounted a tmpfs"}, nil
	case "chown":
		if err := syscall.Chown(in.Path, os.Getuid(), os.Getgid()); err != nil {
			return fail(err)
		}
		return Output{Value: "took the file"}, nil
	case "read":
		data, err := os.ReadFile(in.Path)
		if err != nil {
			return fail(err)
		}
		return Output{Value: string(data)}, nil
	case "write":
		if err := os.WriteFile(in.Path, []byte(in.Data), 0o644); err != nil {
			return fail(err)
		}
		return Output{Value: "written"}, nil
	case "pid":
		return Output{Value: fmt.Sprint(os.Getpid())}, nil
	case "setuid":
		// Become another user (what a root worker with CAP_SETUID could do to reach files
		// of that user).
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, 12345, 12345, 12345); e != 0 {
			return fail(e)
		}
		return Output{Value: "became uid 12345"}, nil
	case "memfd":
		nr := map[string]uintptr{"amd64": 319, "arm64": 279}[runtime.GOARCH]
		name := []byte("x\x00")
		fd, _, e := syscall.Syscall(nr, uintptr(unsafe.Pointer(&name[0])), 0, 0)
		if e != 0 {
			return fail(e)
		}
		size := in.MB << 20
		if err := syscall.Ftruncate(int(fd), int64(size)); err != nil {
			return fail(err)
		}
		mem, err := syscall.Mmap(int(fd), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
		if err != nil {
			return fail(err)
		}
		for i := 0; i < size; i += 4096 {
			mem[i] = 1
		}
		return Output{Value: fmt.Sprintf("filled %d MB of shared memory", in.MB)}, nil
	case "fds":
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return fail(err)
		}
		var out []string
		for _, e := range entries {
			target, _ := os.Readlink("/proc/self/fd/" + e.Name())
			out = append(out, e.Name()+"="+target)
		}
		return Output{Value: strings.Join(out, "\n")}, nil
	}
	return Output{}, fmt.Errorf("unknown op %q", in.Op)
}

func main() {
	t, err := tool.NewTyped(tool.Definition{Name: "go-root", Description: "tries root's powers", Timeout: 60000}, run)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := tool.Serve(t); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
`

type rootAttempt struct {
	Value string `json:"value"`
	Error string `json:"error"`
}

// newRootToolFixture is a sandboxed host (Landlock) with the go-root tool built.
func newRootToolFixture(t *testing.T, setup ...func(*host.Options)) *sandboxFixture {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("the host must run as root for root's powers to be at stake")
	}
	setup = append(setup, func(o *host.Options) {
		o.ServerEnv = append(o.ServerEnv, "HOME="+os.Getenv("HOME")) // the Go build cache
	})
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "", setup...)
	files := gotool.Scaffold("go-root")
	files["tool.go"] = rootTool
	sf.addTool("go-root", files)
	if err := sf.h.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e := sf.entry("go-root"); e.Status != host.StatusOK {
		t.Skipf("the Go tool did not build here: %s", e.Error)
	}
	return sf
}

func (sf *sandboxFixture) rootTry(t *testing.T, args map[string]any) (rootAttempt, host.Outcome) {
	t.Helper()
	raw, _ := json.Marshal(args)
	out := sf.call("go-root", string(raw))
	var r rootAttempt
	if out.Result.Success {
		if err := json.Unmarshal(out.Result.Result, &r); err != nil {
			t.Fatalf("decode %s: %v", out.Result.Result, err)
		}
	}
	return r, out
}

// A worker started by a root host keeps no capability: it cannot sniff the machine's
// traffic, rename the machine, mount, take or read another user's files, or change user.
//
// Before the launcher dropped capabilities every one of these worked: CapEff was
// 000001ffffffffff, the packet socket opened, sethostname and the tmpfs mount succeeded,
// the chown took a file of uid 12345 and its 0600 content was read.
func TestSandboxRootPowers(t *testing.T) {
	sf := newRootToolFixture(t)
	other := filepath.Join(sf.ws, "others.txt")
	write(t, other, "private to uid 12345")
	if err := os.Chown(other, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(sf.ws, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}

	r, out := sf.rootTry(t, map[string]any{"op": "status"})
	if !out.Result.Success || r.Error != "" {
		t.Fatalf("status: %+v %s", r, out.Result.Error)
	}
	t.Logf("worker's credentials:\n%s", r.Value)
	for _, want := range []string{"CapInh: 0000000000000000", "CapPrm: 0000000000000000", "CapEff: 0000000000000000", "CapBnd: 0000000000000000", "CapAmb: 0000000000000000", "NoNewPrivs: 1"} {
		if !strings.Contains(r.Value, want) {
			t.Errorf("the worker's status lacks %q:\n%s", want, r.Value)
		}
	}
	for _, c := range []struct {
		args map[string]any
		want string // the kernel's refusal
	}{
		{map[string]any{"op": "packet"}, "address family not supported"}, // the launcher's socket allow-list, before the capability
		{map[string]any{"op": "rawsocket"}, "operation not permitted"},
		{map[string]any{"op": "hostname"}, "operation not permitted"},
		{map[string]any{"op": "mount", "path": mnt}, "operation not permitted"},
		{map[string]any{"op": "chown", "path": other}, "operation not permitted"},
		{map[string]any{"op": "read", "path": other}, "permission denied"},
		{map[string]any{"op": "setuid"}, "operation not permitted"},
	} {
		r, out := sf.rootTry(t, c.args)
		if !out.Result.Success {
			t.Fatalf("%v: the call failed: %s", c.args, out.Result.Error)
		}
		if r.Error == "" || !strings.Contains(r.Error, c.want) {
			t.Errorf("%v: got %q %q, want the kernel to refuse (%s)", c.args, r.Value, r.Error, c.want)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(other, &st); err != nil || st.Uid != 12345 {
		t.Errorf("the other user's file changed owner: %+v %v", st.Uid, err)
	}
	// What the worker owns it still writes: a root host's workspace is root's.
	write(t, filepath.Join(sf.ws, "mine.txt"), "my own file")
	if r, out := sf.rootTry(t, map[string]any{"op": "read", "path": filepath.Join(sf.ws, "mine.txt")}); !out.Result.Success || r.Value != "my own file" {
		t.Fatalf("reading its own workspace: %+v %s", r, out.Result.Error)
	}
	sf.unaffected(t)
}

// A Node worker (the usual kind) has no capability either.
func TestSandboxRootPowersNode(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the host must run as root for root's powers to be at stake")
	}
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "")
	r, out := sf.try(t, map[string]any{"op": "read", "path": "/proc/self/status"})
	if !out.Result.Success || !r.OK {
		t.Fatalf("status: %+v %s", r, out.Result.Error)
	}
	var status string
	_ = json.Unmarshal(r.Value, &status)
	for _, want := range []string{"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000"} {
		if !strings.Contains(status, want) {
			t.Errorf("the Node worker's status lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("status:\n%s", status)
	}
	sf.unaffected(t)
}

// Programs a Node worker starts (childProcess approved) gain nothing at exec either: uid 0
// without SECBIT_NOROOT would get every capability back there.
//
// Before: chown took the other user's file, cat read it, hostname renamed the machine.
func TestSandboxRootPowersChildProcess(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the host must run as root for root's powers to be at stake")
	}
	sf := newSandboxFixture(t, sandbox.ModeLandlock, "{ childProcess: true }")
	if _, err := sf.h.ApprovePermissions("hostile"); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(sf.ws, "others.txt")
	write(t, other, "private to uid 12345")
	if err := os.Chown(other, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	name, _ := os.Hostname()
	for _, c := range []struct {
		path string
		args []string
		want string
	}{
		{"/usr/bin/chown", []string{"0:0", other}, "Operation not permitted"},
		{"/usr/bin/cat", []string{other}, "Permission denied"},
		{"/usr/bin/hostname", []string{name}, "root"}, // "you must be root to change the host name"
	} {
		if _, err := os.Stat(c.path); err != nil {
			t.Logf("no %s here", c.path)
			continue
		}
		r, out := sf.try(t, map[string]any{"op": "spawn", "path": c.path, "args": c.args})
		if !out.Result.Success {
			t.Fatalf("%s: the call failed: %s", c.path, out.Result.Error)
		}
		if r.OK || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("%s %v: got %+v, want the kernel to refuse (%s)", c.path, c.args, r, c.want)
		}
	}
	var st syscall.Stat_t
	if err := syscall.Stat(other, &st); err != nil || st.Uid != 12345 {
		t.Errorf("the other user's file changed owner: %+v %v", st.Uid, err)
	}
	sf.unaffected(t)
}

// Shared memory is not private writable memory: RLIMIT_DATA does not count a memfd mapped
// MAP_SHARED, which before the memory cgroup let a worker fill 1 GB past a 192 MB cap.
func TestSandboxSharedMemoryCap(t *testing.T) {
	sf := newRootToolFixture(t, func(o *host.Options) { o.Limits.MemoryMB = 192 })
	if !strings.Contains(sf.h.Sandbox().Memory, "cgroup") {
		t.Skipf("no memory cgroup here: %s", sf.h.Sandbox().Memory)
	}
	r, out := sf.rootTry(t, map[string]any{"op": "memfd", "mb": 64})
	if !out.Result.Success || r.Error != "" {
		t.Fatalf("64 MB of shared memory under a 192 MB cap: %+v %s", r, out.Result.Error)
	}
	r, out = sf.rootTry(t, map[string]any{"op": "memfd", "mb": 1024})
	if out.Result.Success || !strings.Contains(out.Result.Error, "memory limit of 192 MB") || !strings.Contains(out.Result.Error, "memory cgroup") {
		t.Fatalf("1024 MB of shared memory under a 192 MB cap: %+v %s", r, out.Result.Error)
	}
	t.Logf("1024 MB of shared memory: %s %s", r.Error, firstLine(out.Result.Error))

	// The worker keeps uid 0, which owns the cgroup files: Landlock (and the view, where
	// /sys is read-only) is what keeps it from raising its own limit or leaving its group.
	r, out = sf.rootTry(t, map[string]any{"op": "pid"})
	if !out.Result.Success || r.Value == "" {
		t.Fatalf("pid: %+v %s", r, out.Result.Error)
	}
	// Its group lies in its workspace's, beneath the host's folder (cgroups.go).
	dir := filepath.Join(strings.TrimPrefix(sf.h.Sandbox().Memory, "cgroup "), "ws-w1")
	tried := 0
	for _, c := range []struct{ path, data string }{
		{filepath.Join(dir, "w-"+r.Value, "memory.limit_in_bytes"), "-1"},
		{filepath.Join(dir, "w-"+r.Value, "memory.max"), "max"},
		{filepath.Join(dir, "memory.limit_in_bytes"), "-1"},
		{filepath.Join(filepath.Dir(filepath.Dir(dir)), "cgroup.procs"), r.Value},
	} {
		if _, err := os.Stat(c.path); err != nil {
			continue
		}
		tried++
		r, out := sf.rootTry(t, map[string]any{"op": "write", "path": c.path, "data": c.data})
		if !out.Result.Success || !refusedWrite(r.Error) {
			t.Errorf("writing %s: %+v %s", c.path, r, out.Result.Error)
		}
	}
	if tried < 2 {
		t.Fatalf("the worker's memory group under %s was not found", dir)
	}
	sf.unaffected(t)
}

// A worker holds only its standard streams and the protocol's pipes: a descriptor the host
// happens to hold without close-on-exec (one jean2 inherited, or a C library's) does not
// reach it.
func TestSandboxInheritedDescriptors(t *testing.T) {
	sf := newRootToolFixture(t)
	// A descriptor of the .env without O_CLOEXEC, as a careless library would hold one.
	fd, err := syscall.Open(sf.secretFile, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	r, out := sf.rootTry(t, map[string]any{"op": "fds"})
	if !out.Result.Success || r.Error != "" {
		t.Fatalf("fds: %+v %s", r, out.Result.Error)
	}
	t.Logf("the worker's descriptors:\n%s", r.Value)
	if strings.Contains(r.Value, sf.secretFile) {
		t.Errorf("the host's descriptor %d of %s reached the worker", fd, sf.secretFile)
	}
	for _, line := range strings.Split(r.Value, "\n") {
		n, target, _ := strings.Cut(line, "=")
		switch n {
		case "0", "1", "2", "3", "4":
			continue
		}
		// The Go runtime's own: the poller and its wake-up descriptor, the cgroup files it
		// reads the CPU quota from, and the listing itself (which Landlock does not let it
		// name).
		if strings.HasPrefix(target, "anon_inode:") || strings.HasPrefix(target, "/sys/fs/cgroup/") || target == "" {
			continue
		}
		t.Errorf("descriptor %s (%s) is neither standard, the protocol's nor the runtime's own", n, target)
	}
}

// refusedWrite reports whether a write's error is a refusal: Landlock's "permission denied"
// or the view's "read-only file system".
func refusedWrite(text string) bool {
	return strings.Contains(text, "permission denied") || strings.Contains(text, "read-only file system")
}

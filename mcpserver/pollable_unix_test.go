//go:build unix

package mcpserver

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"golang.org/x/sys/unix"
)

// blockingPipe is a pipe in blocking mode, as an MCP client hands jean2 mcp its stdin and
// stdout (os.Pipe would give non-blocking, already polled files).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var fds [2]int
	if err := unix.Pipe(fds[:]); err != nil { // pipe2 is not on macOS
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	return r, w
}

func nonblocking(t *testing.T, f *os.File) bool {
	t.Helper()
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var flags int
	var ferr error
	if err := raw.Control(func(fd uintptr) { flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil || ferr != nil {
		t.Fatal(err, ferr)
	}
	return flags&unix.O_NONBLOCK != 0
}

// Blocking stdio pipes are read and written through polled duplicates while connected; Close
// ends the read waiting on stdin and gives both files back in blocking mode, still open.
func TestStdioPollsBlockingPipes(t *testing.T) {
	inR, inW := blockingPipe(t)
	outR, outW := blockingPipe(t)
	c, err := (&StdioTransport{Reader: inR, Writer: outW}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !nonblocking(t, inR) || !nonblocking(t, outW) {
		t.Fatal("stdin and stdout are not polled while connected")
	}
	if _, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if m, err := c.Read(context.Background()); err != nil || m.(*jsonrpc.Request).Method != "ping" {
		t.Fatal(m, err)
	}
	id, _ := jsonrpc.MakeID(float64(1))
	if err := c.Write(context.Background(), &jsonrpc.Response{ID: id, Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	n, err := outR.Read(buf)
	if err != nil || !strings.Contains(string(buf[:n]), `"id":1`) {
		t.Fatalf("answer %q %v", buf[:n], err)
	}

	// The transport's reader is waiting on stdin now; Close must end it, not leave it behind
	// to swallow what arrives later.
	time.Sleep(20 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(context.Background()); err == nil {
		t.Fatal("a read after Close returned a message")
	}
	select {
	case <-c.(*stdioConn).readerDone:
	default:
		t.Fatal("Close returned with the goroutine reading stdin still running")
	}
	if nonblocking(t, inR) || nonblocking(t, outW) {
		t.Fatal("Close left stdin or stdout non-blocking")
	}
	// The caller's files are still open and usable, and nothing reads stdin any more.
	if _, err := io.WriteString(inW, "after\n"); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		b := make([]byte, 100)
		n, _ := inR.Read(b)
		got <- string(b[:n])
	}()
	select {
	case s := <-got:
		if s != "after\n" {
			t.Fatalf("stdin after Close: %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stdin after Close: the line was swallowed by the transport's reader")
	}
	if _, err := io.WriteString(outW, "after\n"); err != nil {
		t.Fatalf("stdout closed by Close: %v", err)
	}
	if n, err := outR.Read(buf); err != nil || string(buf[:n]) != "after\n" {
		t.Fatalf("%q %v", buf[:n], err)
	}
}

// Files that are not pipes or sockets, and readers that are not files, are used as given.
func TestStdioLeavesOtherFilesAlone(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/in")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if p, _ := pollable(f); p != nil {
		t.Error("a regular file was made pollable")
	}
	if p, _ := pollable(strings.NewReader("")); p != nil {
		t.Error("a strings.Reader was made pollable")
	}
	r, _, err := os.Pipe() // already non-blocking and polled by os
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if p, _ := pollable(r); p != nil {
		t.Error("an already polled pipe was duplicated")
	}
}

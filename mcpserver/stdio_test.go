package mcpserver

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestDecodeLine(t *testing.T) {
	msgs, err := decodeLine([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`))
	if err != nil || len(msgs) != 1 {
		t.Fatal(msgs, err)
	}
	if r, ok := msgs[0].(*jsonrpc.Request); !ok || r.Method != "tools/call" || r.ID.Raw() != int64(7) || string(r.Params) != `{"name":"x"}` {
		t.Fatalf("%#v", msgs[0])
	}
	msgs, err = decodeLine([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	if r, ok := msgs[0].(*jsonrpc.Request); err != nil || !ok || r.ID.IsValid() {
		t.Fatalf("notification %#v %v", msgs, err)
	}
	msgs, err = decodeLine([]byte(`{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"no"}}`))
	if r, ok := msgs[0].(*jsonrpc.Response); err != nil || !ok || r.Error == nil || !strings.Contains(r.Error.Error(), "no") {
		t.Fatalf("error response %#v %v", msgs, err)
	}
	msgs, err = decodeLine([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`))
	if err != nil || len(msgs) != 2 {
		t.Fatalf("batch %#v %v", msgs, err)
	}
	for _, bad := range []string{`{`, `{"jsonrpc":"1.0","id":1,"method":"x"}`, `{"jsonrpc":"2.0","result":{}}`, `[]`, `{"jsonrpc":"2.0","id":{},"method":"x"}`} {
		if _, err := decodeLine([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
}

// Lines longer than the reader's buffer are read whole; a line past the limit is refused.
func TestReadLine(t *testing.T) {
	long := strings.Repeat("x", 200_000)
	br := bufio.NewReaderSize(strings.NewReader(long+"\nnext"), 16)
	line, err := readLine(br)
	if err != nil || string(line) != long {
		t.Fatalf("%d %v", len(line), err)
	}
	if line, err := readLine(br); string(line) != "next" || err != io.EOF {
		t.Fatalf("%q %v", line, err)
	}
	c, _ := (&StdioTransport{Reader: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"), Writer: io.Discard}).Connect(context.Background())
	if m, err := c.Read(context.Background()); err != nil || m.(*jsonrpc.Request).Method != "ping" {
		t.Fatal(m, err)
	}
	if _, err := c.Read(context.Background()); err != io.EOF {
		t.Fatalf("after the last line: %v", err)
	}
	_ = c.Close()
}

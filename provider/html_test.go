package provider_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
)

// A base URL that points at a web page (a proxy's sign-in page, a gateway's error page,
// the provider's website instead of its API) answers HTML. The person is told that, with
// the page's title, instead of an empty answer or a page of markup.
func TestProviderAnsweringHTMLIsNamed(t *testing.T) {
	page := `<!DOCTYPE html><html><head><title>Sign in – Corporate Proxy</title></head>` +
		`<body><form>` + strings.Repeat("<div>field</div>", 200) + `</form></body></html>`
	for _, f := range flavors() {
		for _, status := range []int{200, 502} {
			t.Run(f.name+"/"+http.StatusText(status), func(t *testing.T) {
				srv, p := f.start(t, nil)
				for range 4 {
					srv.Push(providertest.Reply{Status: status, Body: page,
						Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}})
				}
				s, err := p.Stream(context.Background(), ask(f.model()))
				if err == nil {
					_, err = provider.Collect(s)
				}
				var pe *provider.Error
				if !errors.As(err, &pe) {
					t.Fatalf("error = %v; want a provider error", err)
				}
				msg := err.Error()
				for _, want := range []string{"HTML", "Sign in – Corporate Proxy", "base URL"} {
					if !strings.Contains(msg, want) {
						t.Errorf("error %q does not say %q", msg, want)
					}
				}
				if strings.Contains(msg, "<div>") || len(msg) > 600 {
					t.Errorf("error shows the page's markup (%d bytes): %q", len(msg), msg)
				}
				if pe.Temporary() != (status >= 500) {
					t.Errorf("Temporary() = %v for HTTP %d", pe.Temporary(), status)
				}
			})
		}
	}
}

package provider

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
)

// htmlPeek is how much of a web page is read to find its title.
const htmlPeek = 64 << 10

// htmlAnswer is a web page where the API should have answered: the base URL points at a
// website, a proxy's sign-in page or a gateway's error page. The SDKs would read it as an
// empty stream or show its markup as the error message; the person needs to hear "this is
// a web page, check the base URL".
type htmlAnswer struct {
	status int
	title  string
}

func (h *htmlAnswer) Error() string {
	page := "a web page (HTML)"
	if h.title != "" {
		page = fmt.Sprintf("a web page (HTML) titled %q", h.title)
	}
	return "the server answered with " + page + " instead of the provider's API"
}

// refuseHTML is SDK middleware (both SDKs share the signature) that turns an HTML
// answer into an htmlAnswer before the SDK reads it.
func refuseHTML(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || !isHTML(res.Header.Get("Content-Type")) {
		return res, err
	}
	defer res.Body.Close()
	page, _ := io.ReadAll(io.LimitReader(res.Body, htmlPeek))
	return nil, &htmlAnswer{status: res.StatusCode, title: pageTitle(page)}
}

func isHTML(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "text/html" || mt == "application/xhtml+xml")
}

// pageTitle is the text of the page's <title>, cut to a line's length.
func pageTitle(page []byte) string {
	z := html.NewTokenizer(bytes.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken:
			if name, _ := z.TagName(); string(name) != "title" || z.Next() != html.TextToken {
				continue
			}
			title := strings.Join(strings.Fields(string(z.Text())), " ")
			if len(title) > 120 {
				cut := 120
				for cut > 0 && !utf8.RuneStart(title[cut]) {
					cut--
				}
				title = title[:cut] + "…"
			}
			return title
		}
	}
}

// htmlError is the *Error for an HTML answer from the provider at baseURL.
func htmlError(name, baseURL string, h *htmlAnswer, err error) *Error {
	e := &Error{Provider: name, Err: err,
		Message: h.Error() + "; check the provider's base URL (" + baseURL + ") and any proxy between jean2 and it"}
	if h.status >= 400 {
		e.Status = h.status
	}
	return e
}

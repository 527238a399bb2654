package builtin

import (
	"net/url"
	"strings"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// converterDomain makes relative links of the page absolute against the URL it came from
// (after redirects).
func fetchDomain(u *url.URL) converter.ConvertOptionFunc {
	return converter.WithDomain(u.Scheme + "://" + u.Host)
}

// htmlTitle is the text of the page's first <title>.
func fetchHTMLTitle(page string) string {
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken:
			if name, _ := z.TagName(); atom.Lookup(name) == atom.Title {
				if z.Next() == html.TextToken {
					return strings.TrimSpace(strings.Join(strings.Fields(string(z.Text())), " "))
				}
				return ""
			}
		}
	}
}

// htmlText is the page's text: no tags, no scripts or styles, entities decoded, runs of
// white space as one space.
func fetchHTMLText(page string) string {
	z := html.NewTokenizer(strings.NewReader(page))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.Join(strings.Fields(b.String()), " ")
		case html.StartTagToken:
			if name, _ := z.TagName(); fetchHiddenElement(atom.Lookup(name)) {
				skip++
			}
			b.WriteByte(' ')
		case html.EndTagToken:
			if name, _ := z.TagName(); fetchHiddenElement(atom.Lookup(name)) && skip > 0 {
				skip--
			}
			b.WriteByte(' ')
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
			}
		}
	}
}

func fetchHiddenElement(a atom.Atom) bool {
	return a == atom.Script || a == atom.Style || a == atom.Noscript || a == atom.Template
}

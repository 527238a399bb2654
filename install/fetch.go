package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// maxRedirects bounds how many redirects one download follows.
const maxRedirects = 10

// NewHTTPClient is the client used when Options.Client is nil: bounded dialing, TLS and
// response-header waits, proxies from the environment, at most maxRedirects redirects,
// http(s) only and never from https down to http. The whole download is bounded by
// Limits.DownloadTimeout and by the context, not by the client.
func NewHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 30 * time.Second
	tr.ResponseHeaderTimeout = 60 * time.Second
	return &http.Client{Transport: tr, CheckRedirect: checkRedirect}
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > maxRedirects {
		return fmt.Errorf("stopped after %d redirects (last to %s)", maxRedirects, req.URL.Redacted())
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("redirect to %s: only http and https are followed", req.URL.Redacted())
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme == "http" {
		return fmt.Errorf("redirect from https to plain http (%s) refused", req.URL.Redacted())
	}
	return nil
}

// StatusError is an HTTP answer other than 200.
type StatusError struct {
	URL  string
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("GET %s: %d %s", e.URL, e.Code, http.StatusText(e.Code))
}

// fetchOptions describe one download.
type fetchOptions struct {
	limit int64 // refuse a body larger than this
	what  string
	// progress hears bytes so far and the total (-1 when the server did not say).
	progress func(done, total int64)
}

// fetch GETs rawURL into w. A response above the limit, a cut connection and a transfer
// that stalls for idleTimeout are errors.
func (in *Installer) fetch(ctx context.Context, rawURL string, w io.Writer, o fetchOptions) (int64, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return 0, fmt.Errorf("%q is not an http or https URL", rawURL)
	}
	display := u.Redacted()
	ctx, cancel := context.WithTimeout(ctx, in.limits.DownloadTimeout)
	defer cancel()
	// A transfer with no bytes for idleTimeout is given up, so a server that stops sending
	// does not hold the install for the whole download timeout.
	ctx, stall := context.WithCancelCause(ctx)
	defer stall(nil)
	idle := time.AfterFunc(in.limits.IdleTimeout, func() {
		stall(fmt.Errorf("no data for %s", in.limits.IdleTimeout))
	})
	defer idle.Stop()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", display, err)
	}
	req.Header.Set("User-Agent", "jean2-tools-install")
	resp, err := in.client.Do(req)
	if err != nil {
		return 0, fetchError(ctx, display, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return 0, &StatusError{URL: display, Code: resp.StatusCode}
	}
	total := resp.ContentLength
	if total > o.limit {
		return 0, fmt.Errorf("GET %s: the %s is %d bytes, more than the limit of %d", display, o.what, total, o.limit)
	}
	if o.progress != nil {
		o.progress(0, total)
	}
	var done int64
	buf := make([]byte, 64<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			idle.Reset(in.limits.IdleTimeout)
			if done+int64(n) > o.limit {
				return done, fmt.Errorf("GET %s: the %s is larger than the limit of %d bytes", display, o.what, o.limit)
			}
			if _, err := w.Write(buf[:n]); err != nil {
				return done, fmt.Errorf("save %s: %w", display, err)
			}
			done += int64(n)
			if o.progress != nil {
				o.progress(done, total)
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return done, fetchError(ctx, display, rerr)
		}
	}
	if total >= 0 && done != total {
		return done, fmt.Errorf("GET %s: the connection ended after %d of %d bytes", display, done, total)
	}
	return done, nil
}

func fetchError(ctx context.Context, display string, err error) error {
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
		return fmt.Errorf("GET %s: %w", display, cause)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("GET %s: the connection was cut before the end: %w", display, err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("GET %s: %w", display, err)
}

// isAbsent reports whether an error means "there is no such file" (for optional files
// such as a .sha256 beside an archive). Object stores answer 403 for missing objects.
func isAbsent(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code == http.StatusNotFound || se.Code == http.StatusGone || se.Code == http.StatusForbidden
	}
	return false
}

// fetchSmall downloads a small file (an index, a .sha256) into memory.
func (in *Installer) fetchSmall(ctx context.Context, rawURL, what string, limit int64) ([]byte, error) {
	var b strings.Builder
	if _, err := in.fetch(ctx, rawURL, &b, fetchOptions{limit: limit, what: what}); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

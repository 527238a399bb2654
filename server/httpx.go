package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/jean2/jean2/store"
)

// maxBody bounds a request body: a turn's text with a few images fits, a runaway upload
// does not.
const maxBody = 8 << 20

// Error codes of docs/api.md.
const (
	codeBadRequest          = "bad_request"
	codeNoProvider          = "no_provider"
	codeUnauthorized        = "unauthorized"
	codeForbiddenOrig       = "forbidden_origin"
	codeForbiddenHost       = "forbidden_host"
	codeNotFound            = "not_found"
	codeMethod              = "method_not_allowed"
	codeBusy                = "busy"
	codeConflict            = "conflict"
	codeConfirmKey          = "confirm_key"
	codeTooLarge            = "too_large"
	codeInvalidAnswer       = "invalid_answer"
	codeInternal            = "internal"
	codeUnavailable         = "unavailable"
	codeDatabaseUnavailable = "database_unavailable"
	headerContentType       = "Content-Type"
	contentTypeJSON         = "application/json"
	contentTypeJSONUTF      = "application/json; charset=utf-8"
)

// apiError is an error with the status and code the API answers it with.
type apiError struct {
	Status  int            `json:"-"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

func (e *apiError) Error() string { return e.Message }

func errorf(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return errorf(http.StatusBadRequest, codeBadRequest, format, args...)
}

func notFound(format string, args ...any) *apiError {
	return errorf(http.StatusNotFound, codeNotFound, format, args...)
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		// Everything the API sends is made of types that marshal; reaching this is a bug.
		data, status = []byte(`{"error":{"code":"internal","message":"the answer could not be encoded"}}`), http.StatusInternalServerError
	}
	w.Header().Set(headerContentType, contentTypeJSONUTF)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}

// writeErr answers with err: an *apiError as it is, anything else as a 500 whose detail
// goes to the log, not to the client.
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
	case store.Fault(err) != "":
		s.log.Warn("request failed: the database is unavailable", "method", r.Method, "path", r.URL.Path, "error", err)
		ae = s.databaseUnavailable(store.Fault(err))
		w.Header().Set("Retry-After", strconv.Itoa(databaseRetryAfter))
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
		ae = errorf(http.StatusInternalServerError, codeInternal, "the server failed to %s %s; its log says why", r.Method, r.URL.Path)
	}
	writeJSON(w, ae.Status, map[string]any{"error": ae})
}

// databaseRetryAfter is the Retry-After, in seconds, of a database_unavailable answer: the
// store reconnects by itself, so a call a moment later usually works.
const databaseRetryAfter = 2

// databaseUnavailable is the 503 for a call the database could not serve: the request
// was fine, the database (which kind, and why) was not, and the same call can be retried.
// The database's address stays in the log: the answer may go to a client without a token.
func (s *Server) databaseUnavailable(reason string) *apiError {
	kind := "SQLite"
	if s.db != nil && s.db.PostgresURL() != "" {
		kind = "PostgreSQL"
	}
	ae := errorf(http.StatusServiceUnavailable, codeDatabaseUnavailable,
		"database unavailable, retrying: the server's %s database could not serve this call (%s); the server reconnects by itself, send it again in a few seconds", kind, reason)
	ae.Details = map[string]any{"database": kind, "reason": reason, "retryAfterSeconds": databaseRetryAfter}
	return ae
}

// decodeBody reads a JSON body into v, refusing unknown fields, trailing data and bodies
// over maxBody, with messages that say what to fix.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	if ct := r.Header.Get(headerContentType); ct != "" && !strings.HasPrefix(strings.ToLower(ct), contentTypeJSON) {
		return errorf(http.StatusUnsupportedMediaType, codeBadRequest, "the body must be JSON (Content-Type: application/json), not %s", ct)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &mbe):
			return errorf(http.StatusRequestEntityTooLarge, codeTooLarge, "the body is over %d bytes", maxBody)
		case errors.Is(err, io.EOF):
			return badRequest("the body is empty: send a JSON object")
		case errors.As(err, &se):
			return badRequest("the body is not valid JSON (at byte %d): %v", se.Offset, err)
		case errors.As(err, &te):
			return badRequest("field %q must be %s, not %s", te.Field, te.Type, te.Value)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return badRequest("unknown field %s in the body; see docs/api.md for the fields", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return badRequest("the body could not be read: %v", err)
	}
	if dec.More() {
		return badRequest("the body has data after its JSON object")
	}
	return nil
}

// queryInt reads an optional non-negative integer query parameter.
func queryInt(r *http.Request, name string, def int64) (int64, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("query parameter %s=%q must be a whole number ≥ 0", name, raw)
	}
	return n, nil
}

package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"
)

// TokenPrefix starts every API token, so a leaked one is easy to recognize and search for.
const TokenPrefix = "jean2_"

// AuthToken is an API token as stored: never the token itself, only its hash.
type AuthToken struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	CreatedAt  time.Time `json:"createdAt"`
	LastUsedAt time.Time `json:"lastUsedAt,omitzero"`
}

// ErrBadToken is wrapped by VerifyAuthToken when no stored token matches.
var ErrBadToken = errors.New("the token is not valid")

// usedGranularity bounds how often a token's LastUsedAt is written, so checking a token on
// every request is not a database write on every request.
const usedGranularity = time.Minute

// CreateAuthToken makes a new random API token, stores its SHA-256 and returns the token
// itself; it is shown once and cannot be read back. The token holds 256 random bits, so
// a plain SHA-256 is enough: there is no guessable password to salt or stretch against.
func (db *DB) CreateAuthToken(ctx context.Context, name string) (AuthToken, string, error) {
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return AuthToken{}, "", fmt.Errorf("create auth token: %w", err)
	}
	secret := TokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	hash := sha256.Sum256([]byte(secret))
	t := now()
	tok := AuthToken{ID: NewID("tok_"), Name: name, CreatedAt: toTime(t)}
	if _, err := db.execWrite(ctx, `INSERT INTO auth_tokens (id, name, hash, created_at) VALUES (?, ?, ?, ?)`,
		tok.ID, name, hash[:], t); err != nil {
		return AuthToken{}, "", fmt.Errorf("create auth token %s: %w", tok.ID, err)
	}
	return tok, secret, nil
}

// VerifyAuthToken returns the stored token that secret is, or an error wrapping
// ErrBadToken. The lookup is by hash, so the time it takes tells nothing about the secret.
func (db *DB) VerifyAuthToken(ctx context.Context, secret string) (AuthToken, error) {
	if !strings.HasPrefix(secret, TokenPrefix) {
		return AuthToken{}, fmt.Errorf("verify auth token: %w", ErrBadToken)
	}
	hash := sha256.Sum256([]byte(secret))
	var tok AuthToken
	var created int64
	var used sql.NullInt64
	err := db.read.QueryRowContext(ctx, `SELECT id, name, created_at, last_used_at FROM auth_tokens WHERE hash = ?`, hash[:]).
		Scan(&tok.ID, &tok.Name, &created, &used)
	if errors.Is(err, sql.ErrNoRows) {
		return AuthToken{}, fmt.Errorf("verify auth token: %w", ErrBadToken)
	}
	if err != nil {
		return AuthToken{}, fmt.Errorf("verify auth token: %w", err)
	}
	tok.CreatedAt, tok.LastUsedAt = toTime(created), nullTime(used)
	if t := time.Now(); t.Sub(tok.LastUsedAt) >= usedGranularity {
		if _, err := db.execWrite(ctx, `UPDATE auth_tokens SET last_used_at = ? WHERE id = ?`, t.UnixMilli(), tok.ID); err != nil {
			return AuthToken{}, fmt.Errorf("verify auth token %s: record use: %w", tok.ID, err)
		}
		tok.LastUsedAt = toTime(t.UnixMilli())
	}
	return tok, nil
}

// ListAuthTokens returns the stored tokens (never their secrets), oldest first.
func (db *DB) ListAuthTokens(ctx context.Context) ([]AuthToken, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT id, name, created_at, last_used_at FROM auth_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list auth tokens: %w", err)
	}
	defer rows.Close()
	out := []AuthToken{}
	for rows.Next() {
		var tok AuthToken
		var created int64
		var used sql.NullInt64
		if err := rows.Scan(&tok.ID, &tok.Name, &created, &used); err != nil {
			return nil, fmt.Errorf("list auth tokens: %w", err)
		}
		tok.CreatedAt, tok.LastUsedAt = toTime(created), nullTime(used)
		out = append(out, tok)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list auth tokens: %w", err)
	}
	return out, nil
}

// DeleteAuthToken revokes the token with id.
func (db *DB) DeleteAuthToken(ctx context.Context, id string) error {
	if err := affected(db.execWrite(ctx, `DELETE FROM auth_tokens WHERE id = ?`, id)); err != nil {
		return fmt.Errorf("delete auth token %s: %w", id, err)
	}
	return nil
}

package siteverify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

const (
	// maxResponse bounds the token forwarded to the provider. Turnstile's are at most 2,048 characters and the
	// others' of that order; anything far longer is not a token, and is refused here rather than sent on.
	maxResponse = 16 << 10
	// maxAnswer bounds what is read of the provider's answer: a few hundred bytes of JSON.
	maxAnswer = 64 << 10
)

// answer is the part of a siteverify answer the Verifier reads (Turnstile adds action and cdata, reCAPTCHA v3 a
// score; neither is used). Success is a pointer so an answer without it is told from a refusal.
type answer struct {
	Success    *bool    `json:"success"`
	Hostname   string   `json:"hostname"`
	ErrorCodes []string `json:"error-codes"`
}

// ownCodes are the error codes that fault this deployment's request or keys, or the provider itself, rather than
// the fan's token: a fan cannot fix them by solving the widget again, so they are ErrUnavailable, which callers
// log, rather than ErrRejected, which they do not.
var ownCodes = []string{
	"missing-input-secret", "invalid-input-secret", "sitekey-secret-mismatch", // the keys
	"bad-request", "invalid-remoteip", "missing-remoteip", "not-using-dummy-passcode", // the request
	"internal-error", // Turnstile: retry
}

// Verify asks the provider whether response, the widget's token, is a passed human check, for the fan at remoteIP
// (optional; the provider uses it as a signal). It returns nil, or an error wrapping ErrMissing (no token),
// ErrRejected (the provider said no, with its error codes in the message, or the token was solved on another
// hostname) or ErrUnavailable (the provider could not be reached in time, failed, answered something that is not
// siteverify's JSON, or refused this deployment's keys). When ctx ends first the error also wraps ctx's error.
// Tokens are single-use: a token verified once is refused the next time. A nil Verifier refuses every token with
// ErrUnavailable, so a caller that forgot Enabled fails closed.
func (v *Verifier) Verify(ctx context.Context, response, remoteIP string) error {
	if v == nil {
		return fmt.Errorf("%w: no human check is configured", ErrUnavailable)
	}
	if response == "" {
		return ErrMissing
	}
	if len(response) > maxResponse {
		return fmt.Errorf("%w: a response of %d bytes is no %s token", ErrRejected, len(response), v.name)
	}
	form := url.Values{"secret": {v.secret}, "response": {response}}
	if remoteIP != "" {
		form.Set("remoteip", remoteIP)
	}
	if v.p.sendSiteKey {
		form.Set("sitekey", v.siteKey)
	}
	ctx, cancel := context.WithTimeout(ctx, v.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.p.verifyURL, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, v.name, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		return v.unreachable(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return v.unreachable(ctx, err)
	}
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%w: %s answered %s", ErrUnavailable, v.name, resp.Status)
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil || a.Success == nil {
		return fmt.Errorf("%w: %s answered %s without a siteverify result", ErrUnavailable, v.name, resp.Status)
	}
	if !*a.Success {
		return v.refused(a.ErrorCodes)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s answered %s", ErrUnavailable, v.name, resp.Status)
	}
	if v.hostname != "" && !strings.EqualFold(a.Hostname, v.hostname) {
		return fmt.Errorf("%w: the token was solved on %q, not %q", ErrRejected, a.Hostname, v.hostname)
	}
	return nil
}

// unreachable is the error for a request that got no whole answer: ctx's error with it when ctx ended (the
// Verifier's timeout, or the caller's cancellation).
func (v *Verifier) unreachable(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%w: %s gave no answer (timeout %s): %w", ErrUnavailable, v.name, v.timeout, ctxErr)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, v.name, err)
}

// refused is the error for success false.
func (v *Verifier) refused(codes []string) error {
	list := strings.Join(codes, ", ")
	if list == "" {
		list = "no error codes"
	}
	for _, c := range codes {
		if slices.Contains(ownCodes, c) {
			return fmt.Errorf("%w: %s refused this deployment's request: %s", ErrUnavailable, v.name, list)
		}
	}
	return fmt.Errorf("%w: %s: %s", ErrRejected, v.name, list)
}

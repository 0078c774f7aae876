package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	basaltic "github.com/basaltic-sh/sdk-go"
)

// userAgent names this client in the gateway's logs.
const userAgent = "basaltic-sdk-go/" + basaltic.Version

// maxAnswerBytes bounds an answer read into memory: ten 256 KiB messages, their attributes and
// JSON escaping fit many times over.
const maxAnswerBytes = 64 << 20

// defaultReceiveWait is the long-poll wait assumed for a receive that gives none: the queue's
// own may be up to 20 seconds.
const defaultReceiveWait = 20 * time.Second

// Client calls the basaltic queue API of one gateway with one key. It is safe for concurrent
// use; make one and share it.
type Client struct {
	endpoint    string
	endpointErr error
	key         string
	http        *http.Client
	timeout     time.Duration
	retry       basaltic.RetryPolicy

	// sleep waits d or until ctx is done (a seam for tests).
	sleep func(ctx context.Context, d time.Duration) error
	// now is the clock Retry-After dates are read against.
	now func() time.Time

	randMu sync.Mutex
	rand   *rand.Rand

	// strictDecoding refuses answer fields the result types lack (the tests' check that the
	// types match the API field for field); off, unknown fields are ignored, so that a newer
	// gateway's additions do not break an older client.
	strictDecoding bool
}

// New answers a client of the gateway cfg names, with cfg's key. What cfg leaves zero takes
// its default (basaltic.DefaultEndpoint, an HTTP client that follows no redirects,
// basaltic.DefaultTimeout, basaltic.DefaultRetryPolicy). An endpoint that is no http(s) URL
// makes every call fail with that error, before any request.
func New(cfg basaltic.Config) *Client {
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = basaltic.DefaultEndpoint
	}
	client := &Client{
		endpoint:    strings.TrimRight(endpoint, "/"),
		endpointErr: basaltic.CheckEndpoint(endpoint),
		key:         cfg.APIKey,
		http:        cfg.HTTPClient,
		timeout:     cfg.Timeout,
		retry:       cfg.Retry.WithDefaults(),
		sleep:       sleepContext,
		now:         time.Now,
		rand:        rand.New(rand.NewSource(time.Now().UnixNano())),
	}
	if client.http == nil {
		client.http = &http.Client{
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			// The API answers no redirect; following one would carry the key elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	if client.timeout <= 0 {
		client.timeout = basaltic.DefaultTimeout
	}
	return client
}

// call is one operation: its request and how it may be retried.
type call struct {
	op     string
	method string
	// path is already escaped.
	path  string
	query url.Values
	// body is marshalled to JSON once (nil: no body).
	body interface{}
	// out receives the answer's JSON (nil: the answer is not read).
	out interface{}
	// idempotent calls are retried after any connection error; others only when the
	// connection could not be made.
	idempotent bool
	// attemptTimeout bounds one attempt when the context has no deadline (zero: the client's).
	attemptTimeout time.Duration
	// httpTimeoutAtLeast raises the HTTP client's own Timeout, when it is set and shorter.
	httpTimeoutAtLeast time.Duration
}

// queuePath answers /v1/queues/{id}/suffix with the id escaped, or ErrEmptyQueueID.
func queuePath(queueID, suffix string) (string, error) {
	if queueID == "" {
		return "", ErrEmptyQueueID
	}
	return "/v1/queues/" + url.PathEscape(queueID) + suffix, nil
}

// do makes the call, with retries, and decodes its answer.
func (c *Client) do(ctx context.Context, cl call) error {
	if c.endpointErr != nil {
		return c.endpointErr
	}
	if ctx == nil {
		ctx = context.Background()
	}
	var payload []byte
	if cl.body != nil {
		var err error
		if payload, err = marshal(cl.body); err != nil {
			return fmt.Errorf("basaltic queue: %s: the request is not JSON: %w", cl.op, err)
		}
	}
	for attempt := 1; ; attempt++ {
		err := c.attempt(ctx, cl, payload)
		if err == nil {
			return nil
		}
		wait, retry := c.retryAfter(ctx, cl, err, attempt)
		if !retry {
			return err
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= wait {
			return err
		}
		if sleepErr := c.sleep(ctx, wait); sleepErr != nil {
			return err
		}
	}
}

// marshal answers value's JSON as the API reads it: without encoding/json's HTML escaping
// (a body's "<" or "&" travels as itself).
func marshal(value interface{}) ([]byte, error) {
	var out bytes.Buffer
	encoder := json.NewEncoder(&out)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(value); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// retryAfter answers whether the failed attempt number attempt is retried, and after how long.
func (c *Client) retryAfter(ctx context.Context, cl call, err error, attempt int) (time.Duration, bool) {
	if attempt >= c.retry.MaxAttempts || ctx.Err() != nil {
		return 0, false
	}
	var apiErr *Error
	if errors.As(err, &apiErr) {
		if !apiErr.Retryable() {
			return 0, false
		}
		if apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > c.retry.MaxRetryAfter {
				return 0, false
			}
			return apiErr.RetryAfter, true
		}
		return c.backoff(attempt), true
	}
	var transport *transportError
	if !errors.As(err, &transport) {
		return 0, false
	}
	if cl.idempotent || transport.nothingSent() {
		return c.backoff(attempt), true
	}
	return 0, false
}

// backoff answers the wait after the failed attempt number attempt: BaseDelay doubled per
// attempt, capped at MaxDelay, drawn between half of it and all of it.
func (c *Client) backoff(attempt int) time.Duration {
	delay := c.retry.BaseDelay
	for i := 1; i < attempt && delay < c.retry.MaxDelay; i++ {
		delay *= 2
	}
	if delay > c.retry.MaxDelay {
		delay = c.retry.MaxDelay
	}
	half := delay / 2
	c.randMu.Lock()
	jitter := time.Duration(c.rand.Int63n(int64(half) + 1))
	c.randMu.Unlock()
	return half + jitter
}

func sleepContext(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// attempt makes one request and reads its answer.
func (c *Client) attempt(ctx context.Context, cl call, payload []byte) error {
	if _, ok := ctx.Deadline(); !ok {
		timeout := cl.attemptTimeout
		if timeout <= 0 {
			timeout = c.timeout
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	target := c.endpoint + cl.path
	if len(cl.query) > 0 {
		target += "?" + cl.query.Encode()
	}
	var body io.Reader
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	request, err := http.NewRequestWithContext(ctx, cl.method, target, body)
	if err != nil {
		return fmt.Errorf("basaltic queue: %s: %w", cl.op, withoutURL(err))
	}
	request.Header.Set("Authorization", "Bearer "+c.key)
	request.Header.Set("Accept", "application/json")
	request.Header.Set("User-Agent", userAgent)
	if payload != nil {
		request.Header.Set("Content-Type", "application/json")
	}
	client := c.http
	if cl.httpTimeoutAtLeast > 0 && client.Timeout > 0 && client.Timeout < cl.httpTimeoutAtLeast {
		raised := *client
		raised.Timeout = cl.httpTimeoutAtLeast
		client = &raised
	}
	response, err := client.Do(request)
	if err != nil {
		return &transportError{op: cl.op, endpoint: basaltic.RedactURL(c.endpoint), err: withoutURL(err)}
	}
	defer response.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(response.Body, maxAnswerBytes+1))
	if err != nil {
		return &transportError{op: cl.op, endpoint: basaltic.RedactURL(c.endpoint), err: withoutURL(err), sent: true}
	}
	if len(answer) > maxAnswerBytes {
		return fmt.Errorf("basaltic queue: %s: the answer is larger than %d bytes", cl.op, maxAnswerBytes)
	}
	if response.StatusCode < 200 || response.StatusCode > 299 {
		return c.apiError(cl.op, response, answer)
	}
	if cl.out == nil || len(bytes.TrimSpace(answer)) == 0 {
		return nil
	}
	decoder := json.NewDecoder(bytes.NewReader(answer))
	if c.strictDecoding {
		decoder.DisallowUnknownFields()
	}
	if err := decoder.Decode(cl.out); err != nil {
		return fmt.Errorf("basaltic queue: %s: an answer that is not the API's JSON (HTTP %d): %w", cl.op, response.StatusCode, err)
	}
	return nil
}

// apiError reads an error answer: {"error": {"code", "message"}} and Retry-After.
func (c *Client) apiError(op string, response *http.Response, answer []byte) error {
	apiErr := &Error{
		Operation:  op,
		StatusCode: response.StatusCode,
		RetryAfter: parseRetryAfter(response.Header.Get("Retry-After"), c.now()),
	}
	var shape struct {
		Error *struct {
			Code    ErrorCode `json:"code"`
			Message string    `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(answer, &shape) == nil && shape.Error != nil && shape.Error.Code != "" {
		apiErr.Code = shape.Error.Code
		apiErr.Message = shape.Error.Message
	} else {
		apiErr.Message = fmt.Sprintf("an answer that is not the API's error (%s)", http.StatusText(response.StatusCode))
	}
	return apiErr
}

// parseRetryAfter reads a Retry-After header: seconds, or an HTTP date; zero when absent or
// unreadable.
func parseRetryAfter(value string, now time.Time) time.Duration {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0
	}
	if seconds, err := strconv.ParseInt(value, 10, 64); err == nil {
		if seconds < 0 {
			return 0
		}
		if seconds > int64(24*time.Hour/time.Second) {
			seconds = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(seconds) * time.Second
	}
	if at, err := http.ParseTime(value); err == nil {
		if wait := at.Sub(now); wait > 0 {
			return wait
		}
	}
	return 0
}

// transportError is a call that got no HTTP answer (or lost it while reading). Its message
// never holds the request's URL: a delete's query carries a receipt handle.
type transportError struct {
	op       string
	endpoint string
	err      error
	// sent is true when the request is known to have reached the gateway.
	sent bool
}

// Error names the call and the endpoint (without credentials), never the request's URL.
func (e *transportError) Error() string {
	return fmt.Sprintf("basaltic queue: %s: cannot reach %s: %v", e.op, e.endpoint, e.err)
}

// Unwrap answers the cause (a *net.OpError, context.DeadlineExceeded, …).
func (e *transportError) Unwrap() error { return e.err }

// nothingSent reports whether the request cannot have reached the gateway: the connection (or
// the name lookup before it) failed.
func (e *transportError) nothingSent() bool {
	if e.sent {
		return false
	}
	var dnsErr *net.DNSError
	if errors.As(e.err, &dnsErr) {
		return true
	}
	var opErr *net.OpError
	return errors.As(e.err, &opErr) && opErr.Op == "dial"
}

// withoutURL answers the cause of a *url.Error, whose message would repeat the URL.
func withoutURL(err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err
	}
	return err
}

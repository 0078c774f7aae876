package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	basaltic "github.com/basaltic-sh/sdk-go"
)

const testQueue = "0b5e2c1a-7f3d-4e61-9a0c-2d8f6b7e4a13"

// fastRetry keeps the backoff short so the tests run in milliseconds.
var fastRetry = basaltic.RetryPolicy{MaxAttempts: 3, BaseDelay: 5 * time.Millisecond, MaxDelay: 20 * time.Millisecond}

// testClient answers a client of server with a recorder of the waits between attempts.
func testClient(t *testing.T, endpoint string, policy basaltic.RetryPolicy) (*Client, *[]time.Duration) {
	t.Helper()
	client := New(basaltic.Config{Endpoint: endpoint, APIKey: "sqsgw_test_key", Retry: policy})
	client.strictDecoding = true
	var mu sync.Mutex
	waits := []time.Duration{}
	client.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return sleepContext(ctx, d)
	}
	return client, &waits
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":{"code":%q,"message":%q}}`, code, message)
}

// resetConnection closes the request's connection with a TCP reset, after the request arrived.
func resetConnection(t *testing.T, w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	conn.Close()
}

func TestRetries429ThenSucceedsHonouringRetryAfter(t *testing.T) {
	var calls int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if atomic.AddInt32(&calls, 1) == 1 {
			w.Header().Set("Retry-After", "1")
			writeError(w, 429, "rate_limited", "slow down")
			return
		}
		w.WriteHeader(201)
		io.WriteString(w, `{"result":{"message_id":"m-1"}}`)
	}))
	defer server.Close()
	client, waits := testClient(t, server.URL, fastRetry)
	started := time.Now()
	result, err := client.SendMessage(context.Background(), testQueue, &SendMessageRequest{Body: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if result.MessageID != "m-1" || atomic.LoadInt32(&calls) != 2 {
		t.Fatalf("result %+v after %d calls", result, calls)
	}
	if len(*waits) != 1 || (*waits)[0] != time.Second {
		t.Fatalf("waits %v, want [1s] (Retry-After: 1)", *waits)
	}
	if elapsed := time.Since(started); elapsed < time.Second {
		t.Fatalf("retried after %v, before Retry-After", elapsed)
	}
}

func TestRetryAfterAsAnHTTPDate(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if got := parseRetryAfter(now.Add(3*time.Second).Format(http.TimeFormat), now); got != 3*time.Second {
		t.Fatalf("got %v", got)
	}
	for _, value := range []string{"", "soon", "-5", now.Add(-time.Minute).Format(http.TimeFormat)} {
		if got := parseRetryAfter(value, now); got != 0 {
			t.Errorf("%q: got %v", value, got)
		}
	}
}

func TestRetries503UntilAttemptsRunOut(t *testing.T) {
	var calls int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&calls, 1)
		writeError(w, 503, "unavailable", "the queue service is unavailable; retry after Retry-After")
	}))
	defer server.Close()
	policy := fastRetry
	policy.MaxAttempts = 4
	client, waits := testClient(t, server.URL, policy)
	_, err := client.SendMessage(context.Background(), testQueue, &SendMessageRequest{Body: "x"})
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Code != CodeUnavailable || !apiErr.Retryable() {
		t.Fatalf("want a 503 unavailable *Error, got %v", err)
	}
	if calls != 4 || len(*waits) != 3 {
		t.Fatalf("%d calls and waits %v, want 4 attempts", calls, *waits)
	}
	// Exponential, capped, jittered between half and all of each step: 5, 10, 20 ms.
	for i, wait := range *waits {
		step := policy.BaseDelay << uint(i)
		if step > policy.MaxDelay {
			step = policy.MaxDelay
		}
		if wait < step/2 || wait > step {
			t.Errorf("wait %d is %v, outside [%v, %v]", i, wait, step/2, step)
		}
	}
}

func TestBackoffIsCappedAndJittered(t *testing.T) {
	client := New(basaltic.Config{Retry: basaltic.RetryPolicy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}})
	seen := map[time.Duration]bool{}
	for i := 0; i < 50; i++ {
		wait := client.backoff(10)
		if wait < 500*time.Millisecond || wait > time.Second {
			t.Fatalf("backoff(10) = %v, outside [0.5s, 1s]", wait)
		}
		seen[wait] = true
	}
	if len(seen) < 2 {
		t.Fatal("no jitter")
	}
}

func TestLongRetryAfterIsReturnedAtOnce(t *testing.T) {
	var calls int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&calls, 1)
		w.Header().Set("Retry-After", "120")
		writeError(w, 429, "over_limit", "too many messages in flight")
	}))
	defer server.Close()
	client, _ := testClient(t, server.URL, fastRetry)
	_, err := client.ReceiveMessages(context.Background(), testQueue, nil)
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.RetryAfter != 120*time.Second || apiErr.Code != CodeOverLimit {
		t.Fatalf("got %v", err)
	}
	if calls != 1 {
		t.Fatalf("%d calls: a Retry-After over MaxRetryAfter is the caller's to wait", calls)
	}

	// A Retry-After the context's deadline would not outlive is not waited for either.
	calls = 0
	server2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&calls, 1)
		w.Header().Set("Retry-After", "5")
		writeError(w, 503, "unavailable", "later")
	}))
	defer server2.Close()
	client2, _ := testClient(t, server2.URL, fastRetry)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	started := time.Now()
	if _, err := client2.ListQueues(ctx, nil); !IsCode(err, CodeUnavailable) {
		t.Fatalf("got %v", err)
	}
	if calls != 1 || time.Since(started) > 500*time.Millisecond {
		t.Fatalf("%d calls in %v", calls, time.Since(started))
	}
}

func TestSendIsNotRetriedAfterAConnectionReset(t *testing.T) {
	var calls int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&calls, 1)
		io.Copy(io.Discard, r.Body)
		resetConnection(t, w)
	}))
	defer server.Close()
	client, _ := testClient(t, server.URL, fastRetry)
	_, err := client.SendMessage(context.Background(), testQueue, &SendMessageRequest{Body: "x"})
	if err == nil {
		t.Fatal("a reset connection succeeded")
	}
	var apiErr *Error
	if errors.As(err, &apiErr) {
		t.Fatalf("a transport failure became an API error: %v", err)
	}
	if calls != 1 {
		t.Fatalf("the send was made %d times: it may have been applied, it must not be retried", calls)
	}
	// Neither are the other calls that may have been applied.
	for name, call := range map[string]func() error{
		"ReceiveMessages": func() error { _, err := client.ReceiveMessages(context.Background(), testQueue, nil); return err },
		"SendMessageBatch": func() error {
			_, err := client.SendMessageBatch(context.Background(), testQueue, &SendMessageBatchRequest{Entries: []SendMessageBatchEntry{{ID: "a", Body: "x"}}})
			return err
		},
		"CreateQueue": func() error {
			_, err := client.CreateQueue(context.Background(), &CreateQueueRequest{Name: "q"})
			return err
		},
		"StartRedrive": func() error { _, err := client.StartRedrive(context.Background(), testQueue, nil); return err },
	} {
		calls = 0
		if err := call(); err == nil || calls != 1 {
			t.Errorf("%s: %d calls, error %v", name, calls, err)
		}
	}
}

func TestIdempotentCallsAreRetriedAfterAConnectionReset(t *testing.T) {
	var calls int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if atomic.AddInt32(&calls, 1) == 1 {
			resetConnection(t, w)
			return
		}
		io.WriteString(w, `{"queues":[]}`)
	}))
	defer server.Close()
	client, waits := testClient(t, server.URL, fastRetry)
	list, err := client.ListQueues(context.Background(), nil)
	if err != nil || len(list.Queues) != 0 || calls != 2 || len(*waits) != 1 {
		t.Fatalf("list %+v, err %v, %d calls, waits %v", list, err, calls, *waits)
	}
}

// countingDialer refuses every connection and counts the attempts.
type countingDialer struct{ dials int32 }

func (d *countingDialer) client() *http.Client {
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		atomic.AddInt32(&d.dials, 1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}}
}

func TestARefusedConnectionIsRetriedEvenForASend(t *testing.T) {
	// A port nothing listens on: the connection is refused, nothing is sent.
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := listener.Addr().String()
	listener.Close()
	dialer := &countingDialer{}
	client := New(basaltic.Config{Endpoint: "http://" + address, APIKey: "k", HTTPClient: dialer.client(), Retry: fastRetry})
	handle := ReceiptHandle("AQAB-secret-receipt+/=")
	err = client.DeleteMessage(context.Background(), testQueue, handle)
	if err == nil || dialer.dials != 3 {
		t.Fatalf("%d dials, error %v", dialer.dials, err)
	}
	if strings.Contains(err.Error(), "secret-receipt") || strings.Contains(err.Error(), "receipt_handle=") {
		t.Fatalf("the error repeats the URL with its receipt: %v", err)
	}
	dialer.dials = 0
	if _, err := client.SendMessage(context.Background(), testQueue, &SendMessageRequest{Body: "x"}); err == nil || dialer.dials != 3 {
		t.Fatalf("send: %d dials, error %v (a refused connection sent nothing: retried)", dialer.dials, err)
	}
}

func TestReceiveTimeoutWithoutADeadline(t *testing.T) {
	if got := ReceiveTimeout(nil); got != 30*time.Second {
		t.Fatalf("no wait given: %v, want 20 s + 10 s", got)
	}
	if got := ReceiveTimeout(&ReceiveRequest{WaitTimeSeconds: basaltic.Int(5)}); got != 15*time.Second {
		t.Fatalf("wait 5: %v", got)
	}
	if got := ReceiveTimeout(&ReceiveRequest{WaitTimeSeconds: basaltic.Int(0)}); got != 10*time.Second {
		t.Fatalf("wait 0: %v", got)
	}

	// What each request's context carries.
	deadlines := make(chan time.Duration, 10)
	transport := roundTripper(func(r *http.Request) (*http.Response, error) {
		deadline, ok := r.Context().Deadline()
		if !ok {
			deadlines <- -1
		} else {
			deadlines <- time.Until(deadline)
		}
		body := `{"messages":[]}`
		if r.Method == http.MethodGet {
			body = `{"queues":[]}`
		}
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader(body)), Header: http.Header{}, Request: r}, nil
	})
	client := New(basaltic.Config{Endpoint: "http://gateway.test", APIKey: "k", HTTPClient: &http.Client{Transport: transport}, Timeout: 3 * time.Second})
	near := func(got, want time.Duration) bool { return got > want-time.Second && got <= want }

	for wait, want := range map[int]time.Duration{20: 30 * time.Second, 1: 11 * time.Second} {
		if _, err := client.ReceiveMessages(context.Background(), testQueue, &ReceiveRequest{WaitTimeSeconds: basaltic.Int(wait)}); err != nil {
			t.Fatal(err)
		}
		if got := <-deadlines; !near(got, want) {
			t.Errorf("wait %d s without a context deadline: the request's deadline is in %v, want %v", wait, got, want)
		}
	}
	// A caller's deadline is the request's, shorter or longer than the rule's.
	for _, callerTimeout := range []time.Duration{2 * time.Second, 100 * time.Second} {
		ctx, cancel := context.WithTimeout(context.Background(), callerTimeout)
		if _, err := client.ReceiveMessages(ctx, testQueue, &ReceiveRequest{WaitTimeSeconds: basaltic.Int(20)}); err != nil {
			t.Fatal(err)
		}
		cancel()
		if got := <-deadlines; !near(got, callerTimeout) {
			t.Errorf("a caller's %v deadline: the request's is in %v", callerTimeout, got)
		}
	}
	// Other calls: the config's Timeout.
	if _, err := client.ListQueues(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := <-deadlines; !near(got, 3*time.Second) {
		t.Errorf("a list: the request's deadline is in %v, want 3s", got)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestAShorterCallerDeadlineEndsALongPoll(t *testing.T) {
	var calls int32
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		atomic.AddInt32(&calls, 1)
		// Read to the end, so the server notices the client hang up.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		io.WriteString(w, `{"messages":[]}`)
	}))
	defer server.Close()
	client, _ := testClient(t, server.URL, fastRetry)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	started := time.Now()
	_, err := client.ReceiveMessages(ctx, testQueue, &ReceiveRequest{WaitTimeSeconds: basaltic.Int(20)})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want context.DeadlineExceeded, got %v", err)
	}
	if elapsed := time.Since(started); elapsed > 2*time.Second || calls != 1 {
		t.Fatalf("returned after %v and %d calls", elapsed, calls)
	}
}

func TestAnHTTPClientTimeoutIsRaisedForALongPoll(t *testing.T) {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(800 * time.Millisecond)
		if strings.HasSuffix(r.URL.Path, "/receive") {
			io.WriteString(w, `{"messages":[]}`)
			return
		}
		io.WriteString(w, `{"queues":[]}`)
	}))
	defer server.Close()
	short := &http.Client{Timeout: 500 * time.Millisecond}
	client := New(basaltic.Config{Endpoint: server.URL, APIKey: "k", HTTPClient: short, Retry: basaltic.RetryPolicy{MaxAttempts: 1}})
	if _, err := client.ReceiveMessages(context.Background(), testQueue, &ReceiveRequest{WaitTimeSeconds: basaltic.Int(1)}); err != nil {
		t.Fatalf("a 1 s long poll (answered after 0.8 s) with a 0.5 s HTTP client timeout: %v", err)
	}
	if short.Timeout != 500*time.Millisecond {
		t.Fatal("the caller's HTTP client was changed")
	}
	if _, err := client.ListQueues(context.Background(), nil); err == nil {
		t.Fatal("other calls keep the HTTP client's timeout")
	}
}

func TestErrorAnswers(t *testing.T) {
	codes := map[ErrorCode]int{
		CodeInvalidArgument: 400, CodeReceiptHandleInvalid: 400, CodeUnauthenticated: 401,
		CodePermissionDenied: 403, CodeQueueNotFound: 404, CodeNotFound: 404, CodeMethodNotAllowed: 405,
		CodeRequestTimeout: 408, CodeConflict: 409, CodeReceiptHandleStale: 409, CodePayloadTooLarge: 413,
		CodeURITooLong: 414, CodeRateLimited: 429, CodeOverLimit: 429, CodeUnsupported: 501, CodeUnavailable: 503,
	}
	for code, status := range codes {
		code, status := code, status
		server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, status, string(code), "what went wrong")
		}))
		client, _ := testClient(t, server.URL, basaltic.RetryPolicy{MaxAttempts: 1})
		_, err := client.GetQueue(context.Background(), testQueue, nil)
		server.Close()
		var apiErr *Error
		if !errors.As(fmt.Errorf("wrapped: %w", err), &apiErr) {
			t.Fatalf("%s: not an *Error: %v", code, err)
		}
		if apiErr.Code != code || apiErr.StatusCode != status || apiErr.Message != "what went wrong" || apiErr.Operation != "GetQueue" {
			t.Errorf("%s: %+v", code, apiErr)
		}
		if !IsCode(err, code) || CodeOf(err) != code {
			t.Errorf("%s: IsCode/CodeOf", code)
		}
		if want := fmt.Sprintf("basaltic queue: GetQueue: %s: what went wrong (HTTP %d)", code, status); err.Error() != want {
			t.Errorf("%q, want %q", err.Error(), want)
		}
	}

	// An answer that is not the API's (a proxy's page).
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(502)
		io.WriteString(w, "<html>bad gateway</html>")
	}))
	defer server.Close()
	client, _ := testClient(t, server.URL, basaltic.RetryPolicy{MaxAttempts: 1})
	_, err := client.GetQueue(context.Background(), testQueue, nil)
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 502 || apiErr.Code != "" || CodeOf(err) != "" {
		t.Fatalf("got %#v", err)
	}
	if IsCode(nil, "") || IsCode(errors.New("x"), "") {
		t.Fatal("IsCode of a non-API error")
	}
}

func TestRequestsOnTheWire(t *testing.T) {
	type seen struct{ method, uri, auth, contentType, body, receipt string }
	requests := make(chan seen, 1)
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		requests <- seen{r.Method, r.RequestURI, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(body), r.URL.Query().Get("receipt_handle")}
		switch {
		case r.Method == http.MethodDelete || strings.HasSuffix(r.URL.Path, "/purge") || strings.HasSuffix(r.URL.Path, "/visibility"):
			w.WriteHeader(204)
		case strings.HasSuffix(r.URL.Path, "/metrics"):
			io.WriteString(w, `{"queue_id":"q","interval_seconds":10,"samples":[]}`)
		case strings.HasSuffix(r.URL.Path, "/messages") && r.Method == http.MethodGet:
			io.WriteString(w, `{"messages":[],"next":null}`)
		default:
			io.WriteString(w, `{"queues":[]}`)
		}
	}))
	defer server.Close()
	client, _ := testClient(t, server.URL+"/prefix/", fastRetry)
	ctx := context.Background()

	handle := ReceiptHandle("AQAB+/= &?%#é")
	if err := client.DeleteMessage(ctx, testQueue, handle); err != nil {
		t.Fatal(err)
	}
	got := <-requests
	if got.method != "DELETE" || got.receipt != string(handle) || got.body != "" ||
		got.uri != "/prefix/v1/queues/"+testQueue+"/messages?receipt_handle=AQAB%2B%2F%3D+%26%3F%25%23%C3%A9" {
		t.Fatalf("delete: %+v", got)
	}
	if got.auth != "Bearer sqsgw_test_key" {
		t.Fatalf("authorization: %q", got.auth)
	}

	if err := client.ChangeMessageVisibility(ctx, testQueue, &ChangeVisibilityRequest{ReceiptHandle: handle, VisibilityTimeoutSeconds: 0}); err != nil {
		t.Fatal(err)
	}
	got = <-requests
	if got.body != `{"receipt_handle":"AQAB+/= &?%#é","visibility_timeout_seconds":0}` || got.contentType != "application/json" {
		t.Fatalf("visibility: %+v", got)
	}

	if err := client.PurgeQueue(ctx, "a/b?c"); err != nil {
		t.Fatal(err)
	}
	if got = <-requests; got.uri != "/prefix/v1/queues/a%2Fb%3Fc/purge" || got.method != "POST" {
		t.Fatalf("purge: %+v", got)
	}

	since := time.Date(2026, 5, 1, 12, 0, 0, 500, time.FixedZone("x", 3600))
	if _, err := client.GetQueueMetrics(ctx, testQueue, &MetricsRequest{Since: since}); err != nil {
		t.Fatal(err)
	}
	if got = <-requests; got.uri != "/prefix/v1/queues/"+testQueue+"/metrics?since=2026-05-01T11%3A00%3A00.0000005Z" {
		t.Fatalf("metrics: %+v", got)
	}

	if _, err := client.InspectMessages(ctx, testQueue, &InspectRequest{MaxMessages: 10, After: "42"}); err != nil {
		t.Fatal(err)
	}
	if got = <-requests; got.uri != "/prefix/v1/queues/"+testQueue+"/messages?after=42&max_messages=10" {
		t.Fatalf("inspect: %+v", got)
	}

	if _, err := client.ListQueues(ctx, &ListQueuesRequest{IncludeCounts: true}); err != nil {
		t.Fatal(err)
	}
	if got = <-requests; got.uri != "/prefix/v1/queues?include=counts" || got.method != "GET" {
		t.Fatalf("list: %+v", got)
	}

	if _, err := client.ReceiveMessages(ctx, testQueue, nil); err == nil {
		t.Fatal("the stub answered a list to a receive, strictly decoded: want an error")
	}
	if got = <-requests; got.body != `{}` || got.uri != "/prefix/v1/queues/"+testQueue+"/messages/receive" {
		t.Fatalf("receive: %+v", got)
	}
}

func TestCallsWithoutAQueueIDSendNothing(t *testing.T) {
	client := New(basaltic.Config{Endpoint: "http://127.0.0.1:1", APIKey: "k"})
	if _, err := client.SendMessage(context.Background(), "", &SendMessageRequest{Body: "x"}); !errors.Is(err, ErrEmptyQueueID) {
		t.Fatalf("got %v", err)
	}
	if err := client.DeleteMessage(context.Background(), "", "h"); !errors.Is(err, ErrEmptyQueueID) {
		t.Fatalf("got %v", err)
	}
	bad := New(basaltic.Config{Endpoint: "gateway:8787", APIKey: "k"})
	if _, err := bad.ListQueues(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "not an http(s) URL") {
		t.Fatalf("a bad endpoint: %v", err)
	}
}

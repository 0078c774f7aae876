package queue

// Tests against a live gateway: tests/go/run.sh starts one (embedded backend in memory,
// basaltic.all_queues, metrics every second) and sets BASALTIC_TEST_ENDPOINT,
// BASALTIC_TEST_API_KEY (a key granted *=*) and BASALTIC_TEST_LIMITED_API_KEY (a key granted
// *=send,receive). Without BASALTIC_TEST_ENDPOINT they skip, so `go test ./...` runs offline.
//
// Every answer is decoded strictly here (an answer field the types lack fails the test): the
// types match the API field for field.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	basaltic "github.com/basaltic-sh/sdk-go"
)

type liveGateway struct {
	endpoint string
	admin    *Client
	limited  *Client
	adminKey string
	// answers records the last answer's status and headers, to hold them to the documented ones.
	answers *recorder
}

// recorder is a transport that keeps the status and headers of the last answer.
type recorder struct {
	mu     sync.Mutex
	status int
	header http.Header
	route  string
}

func (r *recorder) RoundTrip(request *http.Request) (*http.Response, error) {
	response, err := http.DefaultTransport.RoundTrip(request)
	if err == nil {
		r.mu.Lock()
		r.status, r.header, r.route = response.StatusCode, response.Header.Clone(), request.Method+" "+request.URL.Path
		r.mu.Unlock()
	}
	return response, err
}

// status fails the test unless the last answer had the documented status.
func (g *liveGateway) status(t *testing.T, what string, want int) {
	t.Helper()
	g.answers.mu.Lock()
	defer g.answers.mu.Unlock()
	if g.answers.status != want {
		t.Errorf("DOC MISMATCH: %s (%s): docs/api/basaltic.md says HTTP %d, the gateway answered %d", what, g.answers.route, want, g.answers.status)
	}
	if g.answers.status != 204 && !strings.HasPrefix(g.answers.header.Get("Content-Type"), "application/json") {
		t.Errorf("%s: Content-Type %q", what, g.answers.header.Get("Content-Type"))
	}
}

func live(t *testing.T) *liveGateway {
	t.Helper()
	endpoint := os.Getenv("BASALTIC_TEST_ENDPOINT")
	if endpoint == "" {
		t.Skip("BASALTIC_TEST_ENDPOINT is unset: this test needs a live gateway (tests/go/run.sh starts one)")
	}
	adminKey := os.Getenv("BASALTIC_TEST_API_KEY")
	limitedKey := os.Getenv("BASALTIC_TEST_LIMITED_API_KEY")
	if adminKey == "" || limitedKey == "" {
		t.Fatal("BASALTIC_TEST_API_KEY and BASALTIC_TEST_LIMITED_API_KEY must be set with BASALTIC_TEST_ENDPOINT")
	}
	answers := &recorder{}
	return &liveGateway{endpoint: endpoint, admin: liveClient(endpoint, adminKey, answers), limited: liveClient(endpoint, limitedKey, answers), adminKey: adminKey, answers: answers}
}

func liveClient(endpoint, key string, answers *recorder) *Client {
	client := New(basaltic.Config{Endpoint: endpoint, APIKey: key, HTTPClient: &http.Client{Transport: answers}})
	client.strictDecoding = true
	return client
}

func uniqueName(prefix string) string {
	random := make([]byte, 4)
	if _, err := rand.Read(random); err != nil {
		panic(err)
	}
	return fmt.Sprintf("go-%s-%s", prefix, hex.EncodeToString(random))
}

// queue creates a queue for the test and deletes it after.
func (g *liveGateway) queue(t *testing.T, request CreateQueueRequest) *Queue {
	t.Helper()
	if request.Name == "" {
		request.Name = uniqueName(strings.ToLower(strings.TrimPrefix(t.Name(), "TestLive")))
	}
	created, err := g.admin.CreateQueue(context.Background(), &request)
	if err != nil {
		t.Fatalf("create %s: %v", request.Name, err)
	}
	t.Cleanup(func() {
		if err := g.admin.DeleteQueue(context.Background(), created.ID); err != nil && !IsCode(err, CodeQueueNotFound) {
			t.Errorf("delete %s: %v", created.Name, err)
		}
	})
	return created
}

func wantCode(t *testing.T, what string, err error, code ErrorCode, status int) *Error {
	t.Helper()
	var apiErr *Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("%s: want %s (HTTP %d), got %v", what, code, status, err)
	}
	if apiErr.Code != code || apiErr.StatusCode != status || apiErr.Message == "" {
		t.Fatalf("%s: want %s (HTTP %d), got %s (HTTP %d): %s", what, code, status, apiErr.Code, apiErr.StatusCode, apiErr.Message)
	}
	return apiErr
}

func receiveOne(t *testing.T, client *Client, queueID string, visibility int) ReceivedMessage {
	t.Helper()
	got, err := client.ReceiveMessages(context.Background(), queueID, &ReceiveRequest{
		MaxMessages: basaltic.Int(1), WaitTimeSeconds: basaltic.Int(2), VisibilityTimeoutSeconds: basaltic.Int(visibility),
	})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if len(got.Messages) != 1 {
		t.Fatalf("receive: %d messages, want 1", len(got.Messages))
	}
	return got.Messages[0]
}

func TestLiveDescribeKey(t *testing.T) {
	g := live(t)
	key, err := g.admin.DescribeKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	g.status(t, "GET /v1/key", 200)
	if key.Name != "admin" || key.ID == "" || !key.Allows("any-queue", PermissionManageQueues) || len(key.Grants["*"]) != 1 || key.Grants["*"][0] != "*" {
		t.Fatalf("%+v", key)
	}
	if strings.Contains(fmt.Sprintf("%+v", key), g.adminKey) {
		t.Fatal("the key's secret came back")
	}
	limited, err := g.limited.DescribeKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if limited.Name != "limited" || !limited.Allows("q", PermissionSend) || !limited.Allows("q", PermissionReceive) || limited.Allows("q", PermissionPurge) {
		t.Fatalf("%+v", limited)
	}
}

func TestLiveQueueLifecycle(t *testing.T) {
	g := live(t)
	ctx := context.Background()
	name := uniqueName("lifecycle")
	created := g.queue(t, CreateQueueRequest{Name: name, Settings: &SettingsInput{
		DelaySeconds: basaltic.Int(0), VisibilityTimeoutSeconds: basaltic.Int(40), RetentionSeconds: basaltic.Int(3600),
	}})
	g.status(t, "POST /v1/queues", 201)
	if created.Name != name || created.Type != Standard || created.Settings.VisibilityTimeoutSeconds != 40 ||
		created.Settings.RetentionSeconds != 3600 || created.Settings.MaxMessageBytes != 262144 || created.Settings.DeadLetterQueue != nil ||
		created.CreatedAt == nil || !created.Can(PermissionManageQueues) || created.Counts != nil || len(created.ID) != 36 {
		t.Fatalf("created: %+v", created)
	}

	// A name in use: 409 conflict. A name that is not one: 400 invalid_argument.
	_, err := g.admin.CreateQueue(ctx, &CreateQueueRequest{Name: name})
	wantCode(t, "the same name again", err, CodeConflict, 409)
	_, err = g.admin.CreateQueue(ctx, &CreateQueueRequest{Name: "not a name!"})
	wantCode(t, "a bad name", err, CodeInvalidArgument, 400)
	_, err = g.admin.CreateQueue(ctx, &CreateQueueRequest{Name: uniqueName("x"), Settings: &SettingsInput{VisibilityTimeoutSeconds: basaltic.Int(43201)}})
	wantCode(t, "a visibility out of range", err, CodeInvalidArgument, 400)

	list, err := g.admin.ListQueues(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.status(t, "GET /v1/queues", 200)
	found := false
	for i, q := range list.Queues {
		if q.ID == created.ID {
			found = q.Counts == nil
		}
		if i > 0 && list.Queues[i-1].Name > q.Name {
			t.Errorf("not listed by name: %s before %s", list.Queues[i-1].Name, q.Name)
		}
	}
	if !found {
		t.Fatalf("the queue is not listed (or has counts unasked): %+v", list)
	}

	if _, err := g.admin.SendMessage(ctx, created.ID, &SendMessageRequest{Body: "counted"}); err != nil {
		t.Fatal(err)
	}
	list, err = g.admin.ListQueues(ctx, &ListQueuesRequest{IncludeCounts: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range list.Queues {
		if q.Counts == nil {
			t.Errorf("%s listed with include=counts has no counts", q.Name)
		} else if q.ID == created.ID && q.Counts.Visible != 1 {
			t.Errorf("%s counts %+v, want 1 visible", q.Name, q.Counts)
		}
	}

	shown, err := g.admin.GetQueue(ctx, strings.ToUpper(created.ID), &GetQueueRequest{IncludeCounts: true})
	if err != nil {
		t.Fatal(err)
	}
	g.status(t, "GET /v1/queues/{id}?include=counts", 200)
	if shown.ID != created.ID || shown.Counts == nil || shown.Counts.Visible != 1 || shown.Counts.InFlight != 0 || shown.Counts.Delayed != 0 {
		t.Fatalf("shown (its id upper-case): %+v %+v", shown, shown.Counts)
	}

	updated, err := g.admin.UpdateQueue(ctx, created.ID, &UpdateQueueRequest{Settings: SettingsInput{
		VisibilityTimeoutSeconds: basaltic.Int(45), ReceiveWaitTimeSeconds: basaltic.Int(1),
	}})
	if err != nil {
		t.Fatal(err)
	}
	g.status(t, "PATCH /v1/queues/{id}", 200)
	if s := updated.Settings; s.VisibilityTimeoutSeconds != 45 || s.ReceiveWaitTimeSeconds != 1 || s.RetentionSeconds != 3600 {
		t.Fatalf("PATCH changes the settings given and keeps the others: %+v", s)
	}

	if err := g.admin.DeleteQueue(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	g.status(t, "DELETE /v1/queues/{id}", 204)
	_, err = g.admin.GetQueue(ctx, created.ID, nil)
	wantCode(t, "a deleted queue", err, CodeQueueNotFound, 404)
	err = g.admin.DeleteQueue(ctx, created.ID)
	wantCode(t, "a deleted queue deleted again", err, CodeQueueNotFound, 404)

	// With all_queues and queue management, a queue made again under its name has its id again.
	again := g.queue(t, CreateQueueRequest{Name: name})
	if again.ID != created.ID {
		t.Errorf("DOC MISMATCH: a queue deleted and made again under its name has id %s, was %s", again.ID, created.ID)
	}
}

func TestLiveSendReceiveDeleteVisibility(t *testing.T) {
	g := live(t)
	ctx := context.Background()
	q := g.queue(t, CreateQueueRequest{})
	binary := []byte{0, 1, 2, 0xfe, 0xff}
	sent, err := g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{
		Body: `{"order_id":"A-1001"} <&> é`,
		Attributes: map[string]MessageAttribute{
			"event":       StringAttribute("order.paid"),
			"amount":      NumberAttribute("42.50"),
			"raw":         BinaryAttribute(binary),
			"evento.año":  StringAttribute("sí"),
			"event type":  StringAttribute("spaces in names"),
			"event:types": NumberAttribute("-1e3"),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	g.status(t, "POST /v1/queues/{id}/messages", 201)
	if sent.MessageID == "" {
		t.Fatal("no message id")
	}

	before := time.Now()
	first := receiveOne(t, g.admin, q.ID, 30)
	g.status(t, "POST /v1/queues/{id}/messages/receive", 200)
	if first.MessageID != sent.MessageID || first.Body != `{"order_id":"A-1001"} <&> é` || first.ReceiveCount != 1 || first.ReceiptHandle == "" {
		t.Fatalf("received %+v", first)
	}
	if first.VisibleAt.Before(before.Add(25*time.Second)) || first.VisibleAt.After(time.Now().Add(31*time.Second)) {
		t.Fatalf("visible_at %v is not 30 s from the receive", first.VisibleAt)
	}
	if len(first.Attributes) != 6 || first.Attributes["event"] != StringAttribute("order.paid") ||
		first.Attributes["amount"] != NumberAttribute("42.50") || first.Attributes["evento.año"].Value != "sí" ||
		first.Attributes["event:types"] != NumberAttribute("-1e3") {
		t.Fatalf("attributes %+v", first.Attributes)
	}
	if raw, err := first.Attributes["raw"].Bytes(); err != nil || !bytes.Equal(raw, binary) {
		t.Fatalf("the Binary attribute came back as %v (%v)", raw, err)
	}

	// Extend, then release (visibility 0): received again, the first receipt is stale.
	if err := g.admin.ChangeMessageVisibility(ctx, q.ID, &ChangeVisibilityRequest{ReceiptHandle: first.ReceiptHandle, VisibilityTimeoutSeconds: 120}); err != nil {
		t.Fatal(err)
	}
	g.status(t, "POST /v1/queues/{id}/messages/visibility", 204)
	if err := g.admin.ChangeMessageVisibility(ctx, q.ID, &ChangeVisibilityRequest{ReceiptHandle: first.ReceiptHandle, VisibilityTimeoutSeconds: 0}); err != nil {
		t.Fatal(err)
	}
	second := receiveOne(t, g.admin, q.ID, 30)
	if second.MessageID != sent.MessageID || second.ReceiveCount != 2 || second.ReceiptHandle == first.ReceiptHandle {
		t.Fatalf("received again: %+v", second)
	}
	err = g.admin.DeleteMessage(ctx, q.ID, first.ReceiptHandle)
	wantCode(t, "a delete with the receipt of an earlier receive", err, CodeReceiptHandleStale, 409)
	err = g.admin.ChangeMessageVisibility(ctx, q.ID, &ChangeVisibilityRequest{ReceiptHandle: first.ReceiptHandle, VisibilityTimeoutSeconds: 10})
	wantCode(t, "a visibility change with an earlier receipt", err, CodeReceiptHandleStale, 409)

	err = g.admin.DeleteMessage(ctx, q.ID, "not-a-receipt")
	wantCode(t, "a malformed receipt", err, CodeReceiptHandleInvalid, 400)
	other := g.queue(t, CreateQueueRequest{Name: uniqueName("other")})
	err = g.admin.DeleteMessage(ctx, other.ID, second.ReceiptHandle)
	wantCode(t, "another queue's receipt", err, CodeReceiptHandleInvalid, 400)
	err = g.admin.DeleteMessage(ctx, q.ID, "")
	wantCode(t, "an empty receipt", err, CodeInvalidArgument, 400)

	// After a release the receipt no longer extends, but deletes until another receive.
	if err := g.admin.ChangeMessageVisibility(ctx, q.ID, &ChangeVisibilityRequest{ReceiptHandle: second.ReceiptHandle, VisibilityTimeoutSeconds: 0}); err != nil {
		t.Fatal(err)
	}
	err = g.admin.ChangeMessageVisibility(ctx, q.ID, &ChangeVisibilityRequest{ReceiptHandle: second.ReceiptHandle, VisibilityTimeoutSeconds: 30})
	wantCode(t, "an extension after a release", err, CodeReceiptHandleStale, 409)
	if err := g.admin.DeleteMessage(ctx, q.ID, second.ReceiptHandle); err != nil {
		t.Fatalf("delete with the current receipt (released, not received again): %v", err)
	}
	g.status(t, "DELETE /v1/queues/{id}/messages?receipt_handle=", 204)
	err = g.admin.DeleteMessage(ctx, q.ID, second.ReceiptHandle)
	wantCode(t, "a delete of a deleted message", err, CodeReceiptHandleStale, 409)
	shown, err := g.admin.GetQueue(ctx, q.ID, &GetQueueRequest{IncludeCounts: true})
	if err != nil || shown.Counts.Visible+shown.Counts.InFlight+shown.Counts.Delayed != 0 {
		t.Fatalf("after the delete: %v %+v", err, shown)
	}

	// The document's own request files, as the Go program sends them.
	var request1 SendMessageRequest
	var request2 ReceiveRequest
	for name, value := range map[string]interface{}{"request-1.json": &request1, "request-2.json": &request2} {
		data, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "basaltic", name))
		if err != nil {
			t.Fatal(err)
		}
		strictUnmarshal(t, data, value)
	}
	sent, err = g.admin.SendMessage(ctx, q.ID, &request1)
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	got, err := g.admin.ReceiveMessages(ctx, q.ID, &request2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 1 || got.Messages[0].MessageID != sent.MessageID || got.Messages[0].Body != `{"order_id":"A-1001"}` ||
		got.Messages[0].Attributes["event"] != StringAttribute("order.paid") {
		t.Fatalf("the document's receive: %+v", got)
	}
	if time.Since(started) > 5*time.Second {
		t.Fatalf("a receive with a message waiting took %v", time.Since(started))
	}
}

// A message sent with W3C trace attributes is received with its context as fields, which the
// strict decoding here would refuse if the result type lacked them.
func TestLiveTraceContext(t *testing.T) {
	g := live(t)
	ctx := context.Background()
	q := g.queue(t, CreateQueueRequest{})
	traceparent := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if _, err := g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{
		Body: "traced",
		Attributes: map[string]MessageAttribute{
			"traceparent": StringAttribute(traceparent),
			"tracestate":  StringAttribute("congo=t61rcWkgMzE"),
		},
	}); err != nil {
		t.Fatal(err)
	}
	got := receiveOne(t, g.admin, q.ID, 30)
	if got.TraceParent != traceparent || got.TraceState != "congo=t61rcWkgMzE" {
		t.Fatalf("trace context %q / %q, want %q / congo=t61rcWkgMzE", got.TraceParent, got.TraceState, traceparent)
	}
	if got.Attributes["traceparent"] != StringAttribute(traceparent) {
		t.Fatalf("the producer's attribute changed: %+v", got.Attributes)
	}
}

func TestLiveFIFO(t *testing.T) {
	g := live(t)
	ctx := context.Background()
	q := g.queue(t, CreateQueueRequest{Type: FIFO, Settings: &SettingsInput{ContentBasedDeduplication: basaltic.Bool(true)}})
	if q.Type != FIFO || q.Settings.ContentBasedDeduplication == nil || !*q.Settings.ContentBasedDeduplication {
		t.Fatalf("%+v", q)
	}
	_, err := g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: "no group"})
	wantCode(t, "a FIFO send without group_id", err, CodeInvalidArgument, 400)
	_, err = g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: "delayed", GroupID: basaltic.String("g"), DelaySeconds: basaltic.Int(5)})
	wantCode(t, "a FIFO send with delay_seconds", err, CodeInvalidArgument, 400)
	for i, body := range []string{"one", "two", "two"} {
		if _, err := g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: body, GroupID: basaltic.String("g")}); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if _, err := g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: "three", GroupID: basaltic.String("g"), DeduplicationID: basaltic.String("d-3")}); err != nil {
		t.Fatal(err)
	}
	got, err := g.admin.ReceiveMessages(ctx, q.ID, &ReceiveRequest{MaxMessages: basaltic.Int(10), WaitTimeSeconds: basaltic.Int(1)})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range got.Messages {
		bodies = append(bodies, m.Body)
	}
	if strings.Join(bodies, ",") != "one,two,three" {
		t.Fatalf("FIFO order with content deduplication: %v", bodies)
	}
}

func TestLiveBatches(t *testing.T) {
	g := live(t)
	ctx := context.Background()
	q := g.queue(t, CreateQueueRequest{})
	sent, err := g.admin.SendMessageBatch(ctx, q.ID, &SendMessageBatchRequest{Entries: []SendMessageBatchEntry{
		{ID: "a", Body: "first", Attributes: map[string]MessageAttribute{"n": NumberAttribute("1")}},
		{ID: "b_2", Body: "second", DelaySeconds: basaltic.Int(0)},
		{ID: "bad", Body: "refused", Attributes: map[string]MessageAttribute{"n": {Type: "Decimal", Value: "1"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	g.status(t, "POST /v1/queues/{id}/messages/batch", 200)
	if len(sent.Successful) != 2 || len(sent.Failed) != 1 || sent.Failed[0].ID != "bad" || sent.Failed[0].Code != CodeInvalidArgument || sent.Failed[0].Message == "" {
		t.Fatalf("send batch: %+v", sent)
	}
	for _, s := range sent.Successful {
		if s.MessageID == "" || (s.ID != "a" && s.ID != "b_2") {
			t.Fatalf("send batch success: %+v", s)
		}
	}
	_, err = g.admin.SendMessageBatch(ctx, q.ID, &SendMessageBatchRequest{Entries: []SendMessageBatchEntry{{ID: "x", Body: "1"}, {ID: "x", Body: "2"}}})
	wantCode(t, "a batch with an id twice", err, CodeInvalidArgument, 400)
	_, err = g.admin.SendMessageBatch(ctx, q.ID, &SendMessageBatchRequest{})
	wantCode(t, "a batch without entries", err, CodeInvalidArgument, 400)

	got, err := g.admin.ReceiveMessages(ctx, q.ID, &ReceiveRequest{MaxMessages: basaltic.Int(10), WaitTimeSeconds: basaltic.Int(1), VisibilityTimeoutSeconds: basaltic.Int(60)})
	if err != nil || len(got.Messages) != 2 {
		t.Fatalf("receive: %v %+v", err, got)
	}
	first, second := got.Messages[0], got.Messages[1]

	changed, err := g.admin.ChangeMessageVisibilityBatch(ctx, q.ID, &ChangeVisibilityBatchRequest{Entries: []ChangeVisibilityBatchEntry{
		{ID: "ok", ReceiptHandle: first.ReceiptHandle, VisibilityTimeoutSeconds: 120},
		{ID: "invalid", ReceiptHandle: "garbage", VisibilityTimeoutSeconds: 120},
	}})
	if err != nil {
		t.Fatal(err)
	}
	g.status(t, "POST /v1/queues/{id}/messages/visibility-batch", 200)
	if len(changed.Successful) != 1 || changed.Successful[0].ID != "ok" || len(changed.Failed) != 1 ||
		changed.Failed[0].ID != "invalid" || changed.Failed[0].Code != CodeReceiptHandleInvalid {
		t.Fatalf("visibility batch: %+v", changed)
	}

	deleted, err := g.admin.DeleteMessageBatch(ctx, q.ID, &DeleteMessageBatchRequest{Entries: []DeleteMessageBatchEntry{
		{ID: "one", ReceiptHandle: first.ReceiptHandle},
		{ID: "two", ReceiptHandle: second.ReceiptHandle},
		{ID: "three", ReceiptHandle: "garbage"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	g.status(t, "POST /v1/queues/{id}/messages/delete-batch", 200)
	if len(deleted.Successful) != 2 || len(deleted.Failed) != 1 || deleted.Failed[0].ID != "three" || deleted.Failed[0].Code != CodeReceiptHandleInvalid {
		t.Fatalf("delete batch: %+v", deleted)
	}
	again, err := g.admin.DeleteMessageBatch(ctx, q.ID, &DeleteMessageBatchRequest{Entries: []DeleteMessageBatchEntry{{ID: "one", ReceiptHandle: first.ReceiptHandle}}})
	if err != nil || len(again.Failed) != 1 || again.Failed[0].Code != CodeReceiptHandleStale || len(again.Successful) != 0 {
		t.Fatalf("delete batch of a deleted message: %v %+v", err, again)
	}
}

func TestLiveInspectPaging(t *testing.T) {
	g := live(t)
	ctx := context.Background()
	q := g.queue(t, CreateQueueRequest{})
	var entries []SendMessageBatchEntry
	for i := 0; i < 15; i++ {
		entries = append(entries, SendMessageBatchEntry{ID: fmt.Sprintf("m%d", i), Body: fmt.Sprintf("message %02d", i)})
	}
	for _, batch := range [][]SendMessageBatchEntry{entries[:10], entries[10:]} {
		result, err := g.admin.SendMessageBatch(ctx, q.ID, &SendMessageBatchRequest{Entries: batch})
		if err != nil || len(result.Failed) != 0 {
			t.Fatalf("send: %v %+v", err, result)
		}
	}
	if _, err := g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: "delayed", DelaySeconds: basaltic.Int(60)}); err != nil {
		t.Fatal(err)
	}
	leased := receiveOne(t, g.admin, q.ID, 60)

	read := func() []InspectedMessage {
		var all []InspectedMessage
		request := &InspectRequest{MaxMessages: 10}
		for page := 0; ; page++ {
			result, err := g.admin.InspectMessages(ctx, q.ID, request)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, result.Messages...)
			if result.Next == nil {
				if page != 1 || len(result.Messages) != 6 {
					t.Fatalf("page %d has %d messages and no next: want a second page of 6", page, len(result.Messages))
				}
				return all
			}
			if len(result.Messages) != 10 {
				t.Fatalf("page %d has %d messages and a next", page, len(result.Messages))
			}
			request.After = *result.Next
		}
	}
	all := read()
	g.status(t, "GET /v1/queues/{id}/messages", 200)
	states := map[MessageState]int{}
	ids := map[string]bool{}
	for _, m := range all {
		states[m.State]++
		ids[m.MessageID] = true
		switch m.State {
		case StateInFlight:
			if m.MessageID != leased.MessageID || m.ReceiveCount != 1 || m.VisibleAt == nil || m.VisibleAt.Before(time.Now().Add(50*time.Second)) {
				t.Errorf("the leased message: %+v", m)
			}
		case StateDelayed:
			if m.Body != "delayed" || m.VisibleAt == nil || m.ReceiveCount != 0 {
				t.Errorf("the delayed message: %+v", m)
			}
		case StateVisible:
			if m.ReceiveCount != 0 || m.SentAt == nil {
				t.Errorf("a visible message: %+v", m)
			}
		default:
			t.Errorf("state %q", m.State)
		}
	}
	if len(all) != 16 || len(ids) != 16 || states[StateVisible] != 14 || states[StateInFlight] != 1 || states[StateDelayed] != 1 {
		t.Fatalf("%d messages (%d ids), states %v", len(all), len(ids), states)
	}
	// Inspecting changed nothing: the same again, and 14 still receivable.
	again := read()
	for i := range all {
		if again[i].MessageID != all[i].MessageID || again[i].ReceiveCount != all[i].ReceiveCount || again[i].State != all[i].State {
			t.Fatalf("a second inspection differs at %d: %+v / %+v", i, again[i], all[i])
		}
	}
	_, err := g.admin.InspectMessages(ctx, q.ID, &InspectRequest{MaxMessages: 11})
	wantCode(t, "max_messages 11", err, CodeInvalidArgument, 400)
	_, err = g.admin.InspectMessages(ctx, q.ID, &InspectRequest{After: "not-a-position"})
	wantCode(t, "an after that is no page's next", err, CodeInvalidArgument, 400)
}

func TestLivePurge(t *testing.T) {
	g := live(t)
	ctx := context.Background()
	q := g.queue(t, CreateQueueRequest{})
	for i := 0; i < 3; i++ {
		if _, err := g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	leased := receiveOne(t, g.admin, q.ID, 60)
	if err := g.admin.PurgeQueue(ctx, q.ID); err != nil {
		t.Fatal(err)
	}
	g.status(t, "POST /v1/queues/{id}/purge", 204)
	page, err := g.admin.InspectMessages(ctx, q.ID, nil)
	if err != nil || len(page.Messages) != 0 || page.Next != nil {
		t.Fatalf("after a purge: %v %+v", err, page)
	}
	shown, err := g.admin.GetQueue(ctx, q.ID, &GetQueueRequest{IncludeCounts: true})
	if err != nil || shown.Counts == nil || *shown.Counts != (QueueCounts{}) {
		t.Fatalf("counts after a purge: %v %+v", err, shown.Counts)
	}
	err = g.admin.DeleteMessage(ctx, q.ID, leased.ReceiptHandle)
	wantCode(t, "the receipt of a message in flight when purged", err, CodeReceiptHandleStale, 409)
}

func TestLivePauseDelivery(t *testing.T) {
	g := live(t)
	ctx := context.Background()
	q := g.queue(t, CreateQueueRequest{})
	paused, err := g.admin.PauseDelivery(ctx, q.ID)
	if err != nil || !paused.DeliveryPaused || paused.PausedSince == nil {
		t.Fatalf("pause: %v %+v", err, paused)
	}
	if _, err := g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: "held"}); err != nil {
		t.Fatal(err)
	}
	wait, visibility := 1, 30
	got, err := g.admin.ReceiveMessages(ctx, q.ID, &ReceiveRequest{WaitTimeSeconds: &wait, VisibilityTimeoutSeconds: &visibility})
	if err != nil || len(got.Messages) != 0 {
		t.Fatalf("a receive while paused: %v %+v", err, got)
	}
	resumed, err := g.admin.ResumeDelivery(ctx, q.ID)
	if err != nil || resumed.DeliveryPaused || resumed.PausedSince != nil {
		t.Fatalf("resume: %v %+v", err, resumed)
	}
	if one := receiveOne(t, g.admin, q.ID, 30); one.Body != "held" {
		t.Fatalf("after the resume: %+v", one)
	}
}

func TestLiveMetrics(t *testing.T) {
	g := live(t)
	ctx := context.Background()
	q := g.queue(t, CreateQueueRequest{})
	for i := 0; i < 2; i++ {
		if _, err := g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// The gateway samples every second here: wait for a sample that saw both messages.
	var metrics *Metrics
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		metrics, err = g.admin.GetQueueMetrics(ctx, q.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := len(metrics.Samples)
		if n > 0 && metrics.Samples[n-1].Visible != nil && *metrics.Samples[n-1].Visible == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample with 2 visible messages after 10 s: %+v", metrics)
		}
		time.Sleep(300 * time.Millisecond)
	}
	g.status(t, "GET /v1/queues/{id}/metrics", 200)
	if metrics.QueueID != q.ID || metrics.IntervalSeconds != 1 {
		t.Fatalf("%+v", metrics)
	}
	var sends int64
	for i, s := range metrics.Samples {
		if i > 0 && s.At.Before(metrics.Samples[i-1].At) {
			t.Fatalf("samples not oldest first at %d", i)
		}
		if !s.Gap() && s.Sends != nil {
			sends += *s.Sends
		}
	}
	if sends != 2 {
		t.Errorf("the samples count %d sends, want 2", sends)
	}
	last := metrics.Samples[len(metrics.Samples)-1].At
	since, err := g.admin.GetQueueMetrics(ctx, q.ID, &MetricsRequest{Since: last})
	if err != nil {
		t.Fatal(err)
	}
	if len(since.Samples) == 0 || since.Samples[0].At.Before(last) {
		t.Fatalf("since %v: %+v", last, since.Samples)
	}
	future, err := g.admin.GetQueueMetrics(ctx, q.ID, &MetricsRequest{Since: time.Now().Add(time.Hour)})
	if err != nil || len(future.Samples) != 0 {
		t.Fatalf("since an hour from now: %v %+v", err, future)
	}
}

func TestLiveRedrive(t *testing.T) {
	g := live(t)
	ctx := context.Background()
	dlq := g.queue(t, CreateQueueRequest{Name: uniqueName("dlq")})
	source := g.queue(t, CreateQueueRequest{Name: uniqueName("source"), Settings: &SettingsInput{
		DeadLetterQueue: &DeadLetterInput{QueueID: dlq.ID, MaxReceiveCount: basaltic.Int(1)},
	}})
	if d := source.Settings.DeadLetterQueue; d == nil || d.QueueID == nil || *d.QueueID != dlq.ID || d.MaxReceiveCount != 1 {
		t.Fatalf("the source's dead-letter queue: %+v", source.Settings)
	}

	// A queue no queue dead-letters to is refused.
	_, err := g.admin.StartRedrive(ctx, source.ID, nil)
	var apiErr *Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("a redrive of a queue no queue dead-letters to: %v", err)
	}
	if apiErr.StatusCode != 409 || apiErr.Code != CodeConflict {
		t.Errorf("DOC MISMATCH: POST /v1/queues/{id}/redrive {} on a queue no other queue dead-letters to: docs/api/basaltic.md says 409 conflict, the gateway answered %d %s (%q)",
			apiErr.StatusCode, apiErr.Code, apiErr.Message)
	}

	// Five messages, each received twice (released at once): the second receive moves them.
	const count = 5
	for i := 0; i < count; i++ {
		if _, err := g.admin.SendMessage(ctx, source.ID, &SendMessageRequest{Body: fmt.Sprintf("dead %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	countsOf := func(id string) QueueCounts {
		shown, err := g.admin.GetQueue(ctx, id, &GetQueueRequest{IncludeCounts: true})
		if err != nil || shown.Counts == nil {
			t.Fatalf("counts: %v %+v", err, shown)
		}
		return *shown.Counts
	}
	deadline := time.Now().Add(15 * time.Second)
	for countsOf(dlq.ID).Visible < count {
		if time.Now().After(deadline) {
			t.Fatalf("the messages did not reach the dead-letter queue: %+v", countsOf(dlq.ID))
		}
		if _, err := g.admin.ReceiveMessages(ctx, source.ID, &ReceiveRequest{MaxMessages: basaltic.Int(10), VisibilityTimeoutSeconds: basaltic.Int(0), WaitTimeSeconds: basaltic.Int(0)}); err != nil {
			t.Fatal(err)
		}
	}

	// A slow redrive (1 a second), listed, a second one refused, cancelled.
	task, err := g.admin.StartRedrive(ctx, dlq.ID, &StartRedriveRequest{MaxMessagesPerSecond: basaltic.Int(1)})
	if err != nil {
		t.Fatal(err)
	}
	g.status(t, "POST /v1/queues/{id}/redrive", 201)
	if task.Status != RedriveRunning || task.MaxMessagesPerSecond == nil || *task.MaxMessagesPerSecond != 1 || task.DestinationQueueID != nil || task.StartedAt.IsZero() {
		t.Fatalf("started: %+v", task)
	}
	tasks, err := g.admin.ListRedrives(ctx, dlq.ID)
	if err != nil || len(tasks.Tasks) != 1 || tasks.Tasks[0].Status != RedriveRunning {
		t.Fatalf("listed: %v %+v", err, tasks)
	}
	g.status(t, "GET /v1/queues/{id}/redrive", 200)
	_, err = g.admin.StartRedrive(ctx, dlq.ID, nil)
	wantCode(t, "a second redrive while one runs", err, CodeConflict, 409)
	cancelled, err := g.admin.CancelRedrive(ctx, dlq.ID)
	if err != nil {
		t.Fatal(err)
	}
	g.status(t, "POST /v1/queues/{id}/redrive/cancel", 200)
	if cancelled.Status != RedriveCancelling && cancelled.Status != RedriveCancelled {
		t.Fatalf("cancelled: %+v", cancelled)
	}
	if cancelled.Moved >= count {
		t.Fatalf("the 1-a-second redrive moved %d before its cancel", cancelled.Moved)
	}
	// Wait for it to stop; then none runs.
	deadline = time.Now().Add(10 * time.Second)
	for {
		tasks, err = g.admin.ListRedrives(ctx, dlq.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tasks.Tasks[0].Status == RedriveCancelled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled redrive did not stop: %+v", tasks.Tasks[0])
		}
		time.Sleep(200 * time.Millisecond)
	}
	_, err = g.admin.CancelRedrive(ctx, dlq.ID)
	wantCode(t, "a cancel with none running", err, CodeConflict, 409)

	// A redrive at full speed moves the rest back to the source.
	if _, err := g.admin.StartRedrive(ctx, dlq.ID, nil); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(15 * time.Second)
	for {
		tasks, err = g.admin.ListRedrives(ctx, dlq.ID)
		if err != nil {
			t.Fatal(err)
		}
		if tasks.Tasks[0].Status == RedriveCompleted {
			break
		}
		if time.Now().After(deadline) || tasks.Tasks[0].Status == RedriveFailed {
			t.Fatalf("the redrive did not complete: %+v", tasks.Tasks[0])
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(tasks.Tasks) != 2 || tasks.Tasks[1].Status != RedriveCancelled {
		t.Fatalf("tasks newest first: %+v", tasks.Tasks)
	}
	if c := countsOf(source.ID); c.Visible != count {
		t.Fatalf("the source after the redrives: %+v", c)
	}
	if c := countsOf(dlq.ID); c.Visible != 0 {
		t.Fatalf("the dead-letter queue after the redrives: %+v", c)
	}
}

func TestLiveErrorCodes(t *testing.T) {
	g := live(t)
	ctx := context.Background()
	q := g.queue(t, CreateQueueRequest{})

	// unauthenticated: a key the gateway does not know.
	stranger := liveClient(g.endpoint, "sqsgw_0000000000000000_notakey", g.answers)
	_, err := stranger.DescribeKey(ctx)
	wantCode(t, "an unknown key", err, CodeUnauthenticated, 401)
	_, err = stranger.SendMessage(ctx, q.ID, &SendMessageRequest{Body: "x"})
	wantCode(t, "a send with an unknown key", err, CodeUnauthenticated, 401)
	if got := g.answers.header.Get("WWW-Authenticate"); got != "Bearer" {
		t.Errorf("DOC MISMATCH: a 401 answer's WWW-Authenticate is %q, docs/api/basaltic.md says Bearer", got)
	}
	_, err = liveClient(g.endpoint, "", g.answers).ListQueues(ctx, nil)
	wantCode(t, "no key", err, CodeUnauthenticated, 401)

	// permission_denied: the limited key (send, receive) sees the queue but may not do more.
	_, err = g.limited.CreateQueue(ctx, &CreateQueueRequest{Name: uniqueName("denied")})
	wantCode(t, "a create without manage_queues", err, CodePermissionDenied, 403)
	err = g.limited.PurgeQueue(ctx, q.ID)
	wantCode(t, "a purge without purge", err, CodePermissionDenied, 403)
	_, err = g.limited.InspectMessages(ctx, q.ID, nil)
	wantCode(t, "an inspect without inspect", err, CodePermissionDenied, 403)
	_, err = g.limited.GetQueueMetrics(ctx, q.ID, nil)
	wantCode(t, "metrics without read_metrics", err, CodePermissionDenied, 403)
	err = g.limited.DeleteQueue(ctx, q.ID)
	wantCode(t, "a queue delete without manage_queues", err, CodePermissionDenied, 403)
	if _, err := g.limited.SendMessage(ctx, q.ID, &SendMessageRequest{Body: "allowed"}); err != nil {
		t.Fatalf("the limited key's send: %v", err)
	}
	m := receiveOne(t, g.limited, q.ID, 30)
	err = g.limited.DeleteMessage(ctx, q.ID, m.ReceiptHandle)
	wantCode(t, "a delete without delete", err, CodePermissionDenied, 403)
	shown, err := g.limited.GetQueue(ctx, q.ID, nil)
	if err != nil || strings.Join(shown.Permissions, ",") != "send,receive" {
		t.Fatalf("the limited key's view: %v %+v", err, shown)
	}

	// queue_not_found: no such queue, or not a UUID.
	_, err = g.admin.SendMessage(ctx, "00000000-0000-4000-8000-000000000000", &SendMessageRequest{Body: "x"})
	wantCode(t, "a queue that does not exist", err, CodeQueueNotFound, 404)
	_, err = g.admin.GetQueue(ctx, "not-a-uuid", nil)
	wantCode(t, "a queue id that is no UUID", err, CodeQueueNotFound, 404)

	// invalid_argument.
	_, err = g.admin.ReceiveMessages(ctx, q.ID, &ReceiveRequest{MaxMessages: basaltic.Int(11)})
	wantCode(t, "max_messages 11", err, CodeInvalidArgument, 400)
	_, err = g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: ""})
	wantCode(t, "an empty body", err, CodeInvalidArgument, 400)
	_, err = g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: "x", Attributes: map[string]MessageAttribute{"raw": {Type: "Binary", Value: "not base64!"}}})
	wantCode(t, "a Binary attribute that is not base64", err, CodeInvalidArgument, 400)
	_, err = g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: strings.Repeat("a", 300000)})
	wantCode(t, "a message over max_message_bytes", err, CodeInvalidArgument, 400)

	// payload_too_large: a request over 3 MiB + 64 KiB.
	_, err = g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: strings.Repeat("a", 4<<20)})
	wantCode(t, "a 4 MiB request", err, CodePayloadTooLarge, 413)

	// A request line over the gateway's limit (16 KiB): a receipt no receive makes that long.
	err = g.admin.DeleteMessage(ctx, q.ID, ReceiptHandle(strings.Repeat("A", 20000)))
	wantCode(t, "a delete whose request line is 20 KB", err, CodeURITooLong, 414)

	// receipt_handle_invalid, receipt_handle_stale and conflict: see the tests above.
	// unsupported (501) is not reachable here: the embedded backend inspects; the sqs backend
	// answers it. unavailable (503: a shared state store down), rate_limited and over_limit
	// (429), request_timeout (408: a body slower than the gateway waits) are not reachable
	// against this gateway in a test's time, and method_not_allowed (405) and not_found (404)
	// not through this client (every method takes its documented route): the unit tests decode
	// each of them.
	t.Log("not reachable against the embedded gateway: unsupported (501, sqs backend only), unavailable, rate_limited, over_limit, request_timeout; not through this client: method_not_allowed, not_found")
}

func TestLiveLongPoll(t *testing.T) {
	g := live(t)
	ctx := context.Background()
	q := g.queue(t, CreateQueueRequest{})
	started := time.Now()
	got, err := g.admin.ReceiveMessages(ctx, q.ID, &ReceiveRequest{WaitTimeSeconds: basaltic.Int(2)})
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(started); len(got.Messages) != 0 || elapsed < 1900*time.Millisecond || elapsed > 6*time.Second {
		t.Fatalf("an empty 2 s long poll: %+v after %v", got, elapsed)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	started = time.Now()
	_, err = g.admin.ReceiveMessages(short, q.ID, &ReceiveRequest{WaitTimeSeconds: basaltic.Int(10)})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(started) > 2*time.Second {
		t.Fatalf("a 300 ms deadline on a 10 s long poll: %v after %v", err, time.Since(started))
	}
	// A message sent during a long poll ends it.
	go func() {
		time.Sleep(500 * time.Millisecond)
		g.admin.SendMessage(ctx, q.ID, &SendMessageRequest{Body: "wake up"})
	}()
	started = time.Now()
	got, err = g.admin.ReceiveMessages(ctx, q.ID, &ReceiveRequest{WaitTimeSeconds: basaltic.Int(10)})
	if err != nil || len(got.Messages) != 1 || time.Since(started) > 5*time.Second {
		t.Fatalf("a long poll a send ends: %v %+v after %v", err, got, time.Since(started))
	}
}

func TestLiveNewConfigFromTheEnvironment(t *testing.T) {
	g := live(t)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(g.adminKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		basaltic.EnvEndpoint: g.endpoint, basaltic.EnvAPIKeyFile: keyFile,
		basaltic.EnvAccount: "acme", basaltic.EnvRegion: "local", "HOME": t.TempDir(),
	}
	cfg, err := basaltic.NewConfig(context.Background(), basaltic.WithLookupEnv(func(name string) (string, bool) {
		value, ok := env[name]
		return value, ok
	}))
	if err != nil {
		t.Fatal(err)
	}
	key, err := New(cfg).DescribeKey(context.Background())
	if err != nil || key.Name != "admin" {
		t.Fatalf("%v %+v", err, key)
	}
	list, err := New(cfg).ListQueues(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(list.Queues))
	for _, q := range list.Queues {
		names = append(names, q.Name)
	}
	if !sort.StringsAreSorted(names) {
		t.Fatalf("queues not by name: %v", names)
	}
}

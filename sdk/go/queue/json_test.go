package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	basaltic "github.com/basaltic-sh/sdk-go"
)

// strictUnmarshal refuses fields value's type lacks.
func strictUnmarshal(t *testing.T, data []byte, value interface{}) {
	t.Helper()
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(value); err != nil {
		t.Fatalf("%s into %T: %v", data, value, err)
	}
}

func compact(t *testing.T, data []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, data); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func mustMarshal(t *testing.T, value interface{}) string {
	t.Helper()
	data, err := marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The document's request files (examples/basaltic in the repository) unmarshal into the types
// unchanged, field for field, and marshal back to the same JSON.
func TestTheDocumentsRequestFilesRoundTrip(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "examples", "basaltic")
	for name, value := range map[string]interface{}{
		"request-1.json": &SendMessageRequest{},
		"request-2.json": &ReceiveRequest{},
	} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		strictUnmarshal(t, data, value)
		if got, want := mustMarshal(t, value), compact(t, data); got != want {
			t.Errorf("%s: marshalled back to\n%s\nwant\n%s", name, got, want)
		}
	}
	var request1 SendMessageRequest
	data, _ := os.ReadFile(filepath.Join(dir, "request-1.json"))
	strictUnmarshal(t, data, &request1)
	want := SendMessageRequest{Body: `{"order_id":"A-1001"}`, Attributes: map[string]MessageAttribute{"event": StringAttribute("order.paid")}}
	if !reflect.DeepEqual(request1, want) {
		t.Fatalf("request-1.json: %+v", request1)
	}
	var request2 ReceiveRequest
	data, _ = os.ReadFile(filepath.Join(dir, "request-2.json"))
	strictUnmarshal(t, data, &request2)
	if *request2.MaxMessages != 10 || *request2.WaitTimeSeconds != 20 || *request2.VisibilityTimeoutSeconds != 60 {
		t.Fatalf("request-2.json: %+v", request2)
	}
	if got := ReceiveTimeout(&request2); got != 30*time.Second {
		t.Fatalf("the document's receive gets an HTTP timeout of %v, want 30 s", got)
	}
}

// Unset optional fields are not sent; a zero that means something is.
func TestUnsetOptionalFieldsAreNotSent(t *testing.T) {
	for _, c := range []struct {
		value interface{}
		want  string
	}{
		{SendMessageRequest{Body: "x"}, `{"body":"x"}`},
		{SendMessageRequest{Body: "<&>", DelaySeconds: basaltic.Int(0), GroupID: basaltic.String("g"), DeduplicationID: basaltic.String("d")},
			`{"body":"<&>","delay_seconds":0,"group_id":"g","deduplication_id":"d"}`},
		{ReceiveRequest{}, `{}`},
		{ReceiveRequest{WaitTimeSeconds: basaltic.Int(0), VisibilityTimeoutSeconds: basaltic.Int(0)}, `{"wait_time_seconds":0,"visibility_timeout_seconds":0}`},
		{ChangeVisibilityRequest{ReceiptHandle: "h"}, `{"receipt_handle":"h","visibility_timeout_seconds":0}`},
		{SendMessageBatchRequest{Entries: []SendMessageBatchEntry{{ID: "a", Body: "x"}}}, `{"entries":[{"id":"a","body":"x"}]}`},
		{DeleteMessageBatchRequest{Entries: []DeleteMessageBatchEntry{{ID: "a", ReceiptHandle: "h"}}}, `{"entries":[{"id":"a","receipt_handle":"h"}]}`},
		{ChangeVisibilityBatchRequest{Entries: []ChangeVisibilityBatchEntry{{ID: "a", ReceiptHandle: "h"}}}, `{"entries":[{"id":"a","receipt_handle":"h","visibility_timeout_seconds":0}]}`},
		{CreateQueueRequest{Name: "orders"}, `{"name":"orders"}`},
		{CreateQueueRequest{Name: "orders", Type: FIFO, Settings: &SettingsInput{ContentBasedDeduplication: basaltic.Bool(true), DeadLetterQueue: &DeadLetterInput{QueueID: "d"}}},
			`{"name":"orders","type":"fifo","settings":{"content_based_deduplication":true,"dead_letter_queue":{"queue_id":"d"}}}`},
		{UpdateQueueRequest{Settings: SettingsInput{VisibilityTimeoutSeconds: basaltic.Int(45), DelaySeconds: basaltic.Int(0)}},
			`{"settings":{"delay_seconds":0,"visibility_timeout_seconds":45}}`},
		{UpdateQueueRequest{}, `{"settings":{}}`},
		{StartRedriveRequest{}, `{}`},
		{StartRedriveRequest{DestinationQueueID: basaltic.String("q"), MaxMessagesPerSecond: basaltic.Int(5)}, `{"destination_queue_id":"q","max_messages_per_second":5}`},
	} {
		if got := mustMarshal(t, c.value); got != c.want {
			t.Errorf("%T: %s, want %s", c.value, got, c.want)
		}
	}
}

// Answers as the gateway writes them (captured from it) decode with no field left over.
func TestAnswersDecodeFieldForField(t *testing.T) {
	queue := `{"id":"b862d66b-d629-556a-9c06-fd3e2cd7a627","name":"q1","type":"standard","settings":{"delay_seconds":0,"receive_wait_time_seconds":0,"visibility_timeout_seconds":30,"max_message_bytes":262144,"retention_seconds":345600,"dead_letter_queue":{"queue_id":null,"max_receive_count":3}},"created_at":"2026-12-05T14:44:27Z","permissions":["send","receive","delete","change_visibility","inspect","purge","read_metrics","manage_queues"],"counts":{"visible":0,"in_flight":1,"delayed":0,"oldest_message_age_seconds":0}}`
	var q Queue
	strictUnmarshal(t, []byte(queue), &q)
	if q.Counts == nil || q.Counts.InFlight != 1 || q.Settings.DeadLetterQueue.QueueID != nil || q.CreatedAt == nil || !q.Can(PermissionPurge) || q.Can("nope") {
		t.Fatalf("%+v", q)
	}
	fifo := `{"id":"x","name":"f","type":"fifo","settings":{"delay_seconds":0,"receive_wait_time_seconds":0,"visibility_timeout_seconds":30,"max_message_bytes":262144,"retention_seconds":345600,"dead_letter_queue":null,"content_based_deduplication":true},"created_at":null,"permissions":[]}`
	q = Queue{}
	strictUnmarshal(t, []byte(fifo), &q)
	if q.Type != FIFO || q.Settings.ContentBasedDeduplication == nil || !*q.Settings.ContentBasedDeduplication || q.Counts != nil || q.CreatedAt != nil {
		t.Fatalf("%+v", q)
	}

	received := `{"messages":[{"message_id":"db3ce4be-2d4d-4781-ba97-ec7a88f8d97d","body":"{\"order_id\":\"A-1001\"}","attributes":{"event":{"type":"String","value":"order.paid"},"raw":{"type":"Binary","value":"AAEC/w=="}},"receipt_handle":"AgABgNKa-secret_handle","receive_count":1,"visible_at":"2026-12-05T14:45:31.895Z"}]}`
	var r ReceiveResult
	strictUnmarshal(t, []byte(received), &r)
	if m := r.Messages[0]; m.VisibleAt.UnixMilli()%1000 != 895 || m.ReceiptHandle != "AgABgNKa-secret_handle" {
		t.Fatalf("%+v", m)
	}
	raw, err := r.Messages[0].Attributes["raw"].Bytes()
	if err != nil || !bytes.Equal(raw, []byte{0, 1, 2, 255}) {
		t.Fatalf("binary: %v %v", raw, err)
	}
	if _, err := r.Messages[0].Attributes["event"].Bytes(); err == nil {
		t.Fatal("a String attribute answered bytes")
	}

	inspected := `{"messages":[{"message_id":"m","body":"b","attributes":{},"receive_count":1,"sent_at":"2026-12-05T14:44:31.883Z","state":"in_flight","visible_at":"2026-12-05T14:45:31.895Z"},{"message_id":"n","body":"b","attributes":{},"receive_count":0,"sent_at":null,"state":"delayed","visible_at":null}],"next":"17"}`
	var i InspectResult
	strictUnmarshal(t, []byte(inspected), &i)
	if i.Next == nil || *i.Next != "17" || i.Messages[0].State != StateInFlight || i.Messages[1].VisibleAt != nil {
		t.Fatalf("%+v", i)
	}
	strictUnmarshal(t, []byte(`{"messages":[],"next":null}`), &i)
	if i.Next != nil {
		t.Fatal("next null")
	}

	metrics := `{"queue_id":"q","interval_seconds":1,"samples":[{"at":"2026-12-05T14:44:28Z","visible":0,"in_flight":0,"delayed":0,"oldest_message_age_seconds":null,"repeated_receives":0,"sends":0,"receives":0},{"at":"2026-12-05T14:44:29Z","visible":null,"in_flight":null,"delayed":null,"oldest_message_age_seconds":null,"repeated_receives":null,"sends":null,"receives":null}]}`
	var m Metrics
	strictUnmarshal(t, []byte(metrics), &m)
	if m.Samples[0].Gap() || !m.Samples[1].Gap() || *m.Samples[0].Visible != 0 {
		t.Fatalf("%+v", m)
	}

	task := `{"status":"running","moved":2,"to_move":5,"max_messages_per_second":1,"destination_queue_id":null,"started_at":"2026-12-05T14:44:28Z","failure":null}`
	var rt RedriveTask
	strictUnmarshal(t, []byte(task), &rt)
	if rt.Status != RedriveRunning || *rt.ToMove != 5 || rt.DestinationQueueID != nil {
		t.Fatalf("%+v", rt)
	}

	batch := `{"successful":[{"id":"a","message_id":"m"},{"id":"b"}],"failed":[{"id":"c","code":"receipt_handle_stale","message":"the receipt is not the current one: nothing changed"}]}`
	var b BatchResult
	strictUnmarshal(t, []byte(batch), &b)
	if b.Failed[0].Code != CodeReceiptHandleStale || b.Successful[1].MessageID != "" {
		t.Fatalf("%+v", b)
	}

	key := `{"id":"2460386e593abb7b","name":"limited","grants":{"*":["send"],"B862D66B-D629-556A-9C06-FD3E2CD7A627":["*"]}}`
	var k Key
	strictUnmarshal(t, []byte(key), &k)
	if !k.Allows("anything", PermissionSend) || k.Allows("anything", PermissionPurge) || !k.Allows("b862d66b-d629-556a-9c06-fd3e2cd7a627", PermissionPurge) {
		t.Fatalf("%+v", k)
	}
}

// The document asks not to log receipts as harmless metadata: fmt's verbs hide them, JSON and
// string() keep them.
func TestPrintingAMessageHidesItsReceipt(t *testing.T) {
	message := ReceivedMessage{MessageID: "m", Body: `{"order_id":"A-1001"}`, ReceiptHandle: "AQAB-very-secret"}
	result := &ReceiveResult{Messages: []ReceivedMessage{message}}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(format, result)
		if strings.Contains(out, "very-secret") {
			t.Errorf("%s printed the receipt: %s", format, out)
		}
	}
	if out := fmt.Sprintf("%+v", result); !strings.Contains(out, `Body:{"order_id":"A-1001"}`) || !strings.Contains(out, "[receipt handle]") {
		t.Errorf("%s", out)
	}
	if data, _ := json.Marshal(message); !strings.Contains(string(data), `"receipt_handle":"AQAB-very-secret"`) {
		t.Errorf("%s", data)
	}
	if string(message.ReceiptHandle) != "AQAB-very-secret" {
		t.Error("string()")
	}
}

func TestAttributeHelpers(t *testing.T) {
	if a := BinaryAttribute([]byte{0xff, 0}); a.Type != "Binary" || a.Value != "/wA=" {
		t.Fatalf("%+v", a)
	}
	if a := NumberAttribute("-1.5e3"); a.Type != "Number" {
		t.Fatalf("%+v", a)
	}
	if data, err := (MessageAttribute{Type: "Binary.png", Value: "AQ=="}).Bytes(); err != nil || len(data) != 1 {
		t.Fatalf("a labelled Binary: %v %v", data, err)
	}
}

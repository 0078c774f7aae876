package queue

import (
	"encoding/base64"
	"fmt"
	"strings"
	"time"
)

// Attribute types: a value is a string on the wire, standard base64 for Binary.
const (
	// AttributeString is text.
	AttributeString = "String"
	// AttributeNumber is a decimal number, written as text ("42.5").
	AttributeNumber = "Number"
	// AttributeBinary is bytes, standard base64 on the wire.
	AttributeBinary = "Binary"
)

// MessageAttribute is a typed attribute: {"type": "String" | "Number" | "Binary", "value"}.
// A message carries up to 20; names are 1–256 bytes, values up to 1,024 bytes (a Binary one
// counted decoded).
type MessageAttribute struct {
	// Type is AttributeString, AttributeNumber or AttributeBinary (a message sent through the
	// SQS endpoint may add a custom ".label").
	Type string `json:"type"`
	// Value is the value as sent on the wire: standard base64 for Binary.
	Value string `json:"value"`
}

// StringAttribute answers a String attribute.
func StringAttribute(value string) MessageAttribute {
	return MessageAttribute{Type: AttributeString, Value: value}
}

// NumberAttribute answers a Number attribute of the decimal number written in value ("42",
// "-1.5e3").
func NumberAttribute(value string) MessageAttribute {
	return MessageAttribute{Type: AttributeNumber, Value: value}
}

// BinaryAttribute answers a Binary attribute holding data (standard base64 on the wire).
func BinaryAttribute(data []byte) MessageAttribute {
	return MessageAttribute{Type: AttributeBinary, Value: base64.StdEncoding.EncodeToString(data)}
}

// Bytes answers a Binary attribute's bytes (its value decoded); an error for other types.
func (a MessageAttribute) Bytes() ([]byte, error) {
	if a.Type != AttributeBinary && !strings.HasPrefix(a.Type, AttributeBinary+".") {
		return nil, fmt.Errorf("basaltic queue: a %s attribute has no bytes", a.Type)
	}
	return base64.StdEncoding.DecodeString(a.Value)
}

// ReceiptHandle is the receipt of one receive of a message: it deletes the message or changes
// its visibility until the message is received again. It is a credential of sorts (the
// document: don't log it as harmless metadata), so printing it with the fmt verbs (%v, %+v,
// %s, %#v) shows "[receipt handle]"; its JSON and string(handle) are the real value.
type ReceiptHandle string

// String hides the handle from fmt's output.
func (ReceiptHandle) String() string { return "[receipt handle]" }

// GoString hides the handle from %#v too.
func (ReceiptHandle) GoString() string { return "[receipt handle]" }

// SendMessageRequest is the body of POST /v1/queues/{queue_id}/messages: the document's
// request-1.json unmarshals into it unchanged. Unset optional fields are not sent.
type SendMessageRequest struct {
	// Body is the message: at least one character, of those SQS allows.
	Body string `json:"body"`
	// Attributes are up to 20 typed attributes by name.
	Attributes map[string]MessageAttribute `json:"attributes,omitempty"`
	// DelaySeconds (0–900), standard queues only: the message's own delay instead of the
	// queue's.
	DelaySeconds *int `json:"delay_seconds,omitempty"`
	// GroupID is the message group: FIFO queues only, required there.
	GroupID *string `json:"group_id,omitempty"`
	// DeduplicationID is the FIFO deduplication id (needed unless the queue deduplicates by
	// content).
	DeduplicationID *string `json:"deduplication_id,omitempty"`
}

// SendMessageResult is what a send answers (HTTP 201, the API's "result").
type SendMessageResult struct {
	// MessageID is the new message's id.
	MessageID string `json:"message_id"`
}

// ReceiveRequest is the body of POST /v1/queues/{queue_id}/messages/receive: the document's
// request-2.json unmarshals into it unchanged. Every field is optional; nil takes the default.
type ReceiveRequest struct {
	// MaxMessages is the most messages to answer, 1–10 (default 1).
	MaxMessages *int `json:"max_messages,omitempty"`
	// WaitTimeSeconds is the long-poll wait, 0–20 (default: the queue's
	// receive_wait_time_seconds).
	WaitTimeSeconds *int `json:"wait_time_seconds,omitempty"`
	// VisibilityTimeoutSeconds is the lease, 0–43200 (default: the queue's).
	VisibilityTimeoutSeconds *int `json:"visibility_timeout_seconds,omitempty"`
}

// ReceiveResult is what a receive answers: 0 to MaxMessages messages. Fewer, even none, is a
// valid result.
type ReceiveResult struct {
	// Messages are the messages received, each leased until its VisibleAt.
	Messages []ReceivedMessage `json:"messages"`
}

// ReceivedMessage is a message received with a lease.
type ReceivedMessage struct {
	// MessageID is the message's id.
	MessageID string `json:"message_id"`
	// Body is the message.
	Body string `json:"body"`
	// Attributes are its attributes, by name.
	Attributes map[string]MessageAttribute `json:"attributes"`
	// ReceiptHandle deletes the message or changes its visibility (printed hidden).
	ReceiptHandle ReceiptHandle `json:"receipt_handle"`
	// ReceiveCount is how many times it has been received, this time included.
	ReceiveCount int `json:"receive_count"`
	// VisibleAt is when the lease ends.
	VisibleAt time.Time `json:"visible_at"`
	// TraceParent is the producer's W3C trace context, empty when the message has none.
	TraceParent string `json:"traceparent,omitempty"`
	// TraceState is the producer's W3C tracestate, empty when its context has none.
	TraceState string `json:"tracestate,omitempty"`
}

// ChangeVisibilityRequest is the body of POST /v1/queues/{queue_id}/messages/visibility.
type ChangeVisibilityRequest struct {
	// ReceiptHandle is the current receipt.
	ReceiptHandle ReceiptHandle `json:"receipt_handle"`
	// VisibilityTimeoutSeconds is counted from the change, 0–43200; 0 releases the message.
	VisibilityTimeoutSeconds int `json:"visibility_timeout_seconds"`
}

// SendMessageBatchRequest is the body of POST /v1/queues/{queue_id}/messages/batch.
type SendMessageBatchRequest struct {
	// Entries are 1–10 messages with unique ids.
	Entries []SendMessageBatchEntry `json:"entries"`
}

// SendMessageBatchEntry is one message of a send batch.
type SendMessageBatchEntry struct {
	// ID is the entry's id, unique in the batch (1–80 letters, digits, '-', '_'): its result
	// carries it.
	ID string `json:"id"`
	// Body is the message.
	Body string `json:"body"`
	// Attributes are up to 20 typed attributes by name.
	Attributes map[string]MessageAttribute `json:"attributes,omitempty"`
	// DelaySeconds (0–900), standard queues only.
	DelaySeconds *int `json:"delay_seconds,omitempty"`
	// GroupID is the message group, FIFO queues only.
	GroupID *string `json:"group_id,omitempty"`
	// DeduplicationID is the FIFO deduplication id.
	DeduplicationID *string `json:"deduplication_id,omitempty"`
}

// DeleteMessageBatchRequest is the body of POST /v1/queues/{queue_id}/messages/delete-batch.
type DeleteMessageBatchRequest struct {
	// Entries are 1–10 receipts with unique ids.
	Entries []DeleteMessageBatchEntry `json:"entries"`
}

// DeleteMessageBatchEntry is one receipt of a delete batch.
type DeleteMessageBatchEntry struct {
	// ID is the entry's id, unique in the batch.
	ID string `json:"id"`
	// ReceiptHandle is the current receipt.
	ReceiptHandle ReceiptHandle `json:"receipt_handle"`
}

// ChangeVisibilityBatchRequest is the body of POST
// /v1/queues/{queue_id}/messages/visibility-batch.
type ChangeVisibilityBatchRequest struct {
	// Entries are 1–10 changes with unique ids.
	Entries []ChangeVisibilityBatchEntry `json:"entries"`
}

// ChangeVisibilityBatchEntry is one change of a visibility batch.
type ChangeVisibilityBatchEntry struct {
	// ID is the entry's id, unique in the batch.
	ID string `json:"id"`
	// ReceiptHandle is the current receipt.
	ReceiptHandle ReceiptHandle `json:"receipt_handle"`
	// VisibilityTimeoutSeconds is counted from the change; 0 releases the message.
	VisibilityTimeoutSeconds int `json:"visibility_timeout_seconds"`
}

// BatchResult is a batch's answer: every entry is in one of the lists. HTTP success does not
// mean every entry succeeded: check Failed and retry only those.
type BatchResult struct {
	// Successful are the entries that acted.
	Successful []BatchSuccess `json:"successful"`
	// Failed are the entries that did not, and why.
	Failed []BatchFailure `json:"failed"`
}

// BatchSuccess is an entry that acted.
type BatchSuccess struct {
	// ID is the entry's id.
	ID string `json:"id"`
	// MessageID is the message's id (send batches only).
	MessageID string `json:"message_id,omitempty"`
}

// BatchFailure is an entry that did not act.
type BatchFailure struct {
	// ID is the entry's id.
	ID string `json:"id"`
	// Code is why: CodeInvalidArgument, CodeUnavailable (retry it), CodeReceiptHandleStale or
	// CodeReceiptHandleInvalid.
	Code ErrorCode `json:"code"`
	// Message is why, for people.
	Message string `json:"message"`
}

// InspectRequest is the query of GET /v1/queues/{queue_id}/messages.
type InspectRequest struct {
	// MaxMessages is the most messages to read, 1–10 (zero: the gateway's default, 10).
	MaxMessages int
	// After reads the messages after this one: the Next of the page before ("" for the first).
	After string
}

// InspectResult is a page of messages read without a lease, in queue order.
type InspectResult struct {
	// Messages are the page's messages.
	Messages []InspectedMessage `json:"messages"`
	// Next is the After of the next page; nil once the queue was read to its end.
	Next *string `json:"next"`
	// Scanned is how many messages the page examined.
	Scanned int `json:"scanned"`
}

// MessageState is where an inspected message is.
type MessageState string

// The states of an inspected message.
const (
	// StateVisible is ready to be received.
	StateVisible MessageState = "visible"
	// StateInFlight is received, and its lease has not ended.
	StateInFlight MessageState = "in_flight"
	// StateDelayed is not delivered yet: its delay has not passed.
	StateDelayed MessageState = "delayed"
)

// InspectedMessage is a message read without a lease: no receipt, nothing changed.
type InspectedMessage struct {
	// MessageID is the message's id.
	MessageID string `json:"message_id"`
	// Position is its place in the queue's order.
	Position string `json:"position"`
	// Body is the message.
	Body string `json:"body"`
	// Attributes are its attributes, by name.
	Attributes map[string]MessageAttribute `json:"attributes"`
	// ReceiveCount is how many times it has been received.
	ReceiveCount int `json:"receive_count"`
	// SentAt is when it was sent, if the backend says.
	SentAt *time.Time `json:"sent_at"`
	// State is where it is now.
	State MessageState `json:"state"`
	// VisibleAt is when it is (or was) visible: after its delay, or when its lease ends.
	VisibleAt *time.Time `json:"visible_at"`
	// GroupID is a FIFO message's group.
	GroupID string `json:"group_id,omitempty"`
	// DeduplicationID is a FIFO message's deduplication id.
	DeduplicationID string `json:"deduplication_id,omitempty"`
}

// QueueType is a queue's type.
type QueueType string

// The queue types.
const (
	// Standard is at-least-once delivery, best-effort order.
	Standard QueueType = "standard"
	// FIFO is ordered per message group, deduplicated.
	FIFO QueueType = "fifo"
)

// The permissions a key may hold on a queue (or on "*", every queue).
const (
	// PermissionSend sends messages (and makes the queue a dead-letter target).
	PermissionSend = "send"
	// PermissionReceive receives messages.
	PermissionReceive = "receive"
	// PermissionDelete deletes messages by receipt.
	PermissionDelete = "delete"
	// PermissionChangeVisibility changes leases.
	PermissionChangeVisibility = "change_visibility"
	// PermissionInspect reads messages without a lease.
	PermissionInspect = "inspect"
	// PermissionPurge deletes every message.
	PermissionPurge = "purge"
	// PermissionReadMetrics reads the queue's metrics.
	PermissionReadMetrics = "read_metrics"
	// PermissionManageQueues creates (on "*"), changes, deletes and redrives queues.
	PermissionManageQueues = "manage_queues"
	// PermissionAll grants every permission.
	PermissionAll = "*"
)

// CreateQueueRequest is the body of POST /v1/queues.
type CreateQueueRequest struct {
	// Name is 1–57 letters, digits or '-', unique among the queues.
	Name string `json:"name"`
	// Type is Standard (the default when empty) or FIFO.
	Type QueueType `json:"type,omitempty"`
	// Settings are the settings to set; nil, or a nil field, takes the default.
	Settings *SettingsInput `json:"settings,omitempty"`
}

// UpdateQueueRequest is the body of PATCH /v1/queues/{queue_id}: the settings given change,
// the others stay.
type UpdateQueueRequest struct {
	// Settings are the settings to change.
	Settings SettingsInput `json:"settings"`
}

// SettingsInput are queue settings to set; a nil field is not sent (the default, or no
// change).
type SettingsInput struct {
	// DelaySeconds (0–900) delays a new message's first delivery.
	DelaySeconds *int `json:"delay_seconds,omitempty"`
	// ReceiveWaitTimeSeconds (0–20) is the long-poll wait of a receive that gives none.
	ReceiveWaitTimeSeconds *int `json:"receive_wait_time_seconds,omitempty"`
	// VisibilityTimeoutSeconds (0–43200) is the lease of a receive that gives none.
	VisibilityTimeoutSeconds *int `json:"visibility_timeout_seconds,omitempty"`
	// MaxMessageBytes (1024–262144) is the largest message, body and attributes together.
	MaxMessageBytes *int `json:"max_message_bytes,omitempty"`
	// RetentionSeconds (60–1209600) is how long a message is kept.
	RetentionSeconds *int `json:"retention_seconds,omitempty"`
	// ContentBasedDeduplication (FIFO queues only) deduplicates by the body's SHA-256.
	ContentBasedDeduplication *bool `json:"content_based_deduplication,omitempty"`
	// DeadLetterQueue is where messages received too often move; the key needs send there.
	DeadLetterQueue *DeadLetterInput `json:"dead_letter_queue,omitempty"`
}

// DeadLetterInput is a dead-letter queue to set.
type DeadLetterInput struct {
	// QueueID is the dead-letter queue's UUID.
	QueueID string `json:"queue_id"`
	// MaxReceiveCount (1–1000, default 5) is the receives after which a message moves there.
	MaxReceiveCount *int `json:"max_receive_count,omitempty"`
}

// Queue is a queue resource.
type Queue struct {
	// ID is the queue's UUID (lowercase, hyphenated).
	ID string `json:"id"`
	// Name is its name.
	Name string `json:"name"`
	// Type is Standard or FIFO.
	Type QueueType `json:"type"`
	// Settings are its settings.
	Settings QueueSettings `json:"settings"`
	// CreatedAt is when it was created, if the backend says.
	CreatedAt *time.Time `json:"created_at"`
	// Permissions are what the key that asked may do on it ("*" spelt out).
	Permissions []string `json:"permissions"`
	// DeliveryPaused says whether its delivery is paused (PauseDelivery): receives get no
	// message and push posts nothing, while sends go on.
	DeliveryPaused bool `json:"delivery_paused"`
	// PausedSince is when its delivery was paused, while it is.
	PausedSince *time.Time `json:"paused_since"`
	// Counts are its messages by state, with IncludeCounts only; nil also when the backend
	// could not count them just now.
	Counts *QueueCounts `json:"counts,omitempty"`
}

// Can reports whether the key that read the queue holds the permission on it.
func (q *Queue) Can(permission string) bool {
	for _, held := range q.Permissions {
		if held == permission {
			return true
		}
	}
	return false
}

// QueueSettings are a queue's settings.
type QueueSettings struct {
	// DelaySeconds delays a new message's first delivery.
	DelaySeconds int `json:"delay_seconds"`
	// ReceiveWaitTimeSeconds is the long-poll wait of a receive that gives none.
	ReceiveWaitTimeSeconds int `json:"receive_wait_time_seconds"`
	// VisibilityTimeoutSeconds is the lease of a receive that gives none.
	VisibilityTimeoutSeconds int `json:"visibility_timeout_seconds"`
	// MaxMessageBytes is the largest message, body and attributes together.
	MaxMessageBytes int `json:"max_message_bytes"`
	// RetentionSeconds is how long a message is kept.
	RetentionSeconds int `json:"retention_seconds"`
	// DeadLetterQueue is where messages received too often move; nil for none.
	DeadLetterQueue *DeadLetterQueue `json:"dead_letter_queue"`
	// ContentBasedDeduplication is set on FIFO queues only.
	ContentBasedDeduplication *bool `json:"content_based_deduplication,omitempty"`
}

// DeadLetterQueue is a queue's dead-letter queue.
type DeadLetterQueue struct {
	// QueueID is its UUID; nil if it is no basaltic queue the gateway knows.
	QueueID *string `json:"queue_id"`
	// MaxReceiveCount is the receives after which a message moves there.
	MaxReceiveCount int `json:"max_receive_count"`
}

// QueueCounts are a queue's messages by state, counted when asked.
type QueueCounts struct {
	// Visible are ready to be received.
	Visible int64 `json:"visible"`
	// InFlight are received and not visible again yet.
	InFlight int64 `json:"in_flight"`
	// Delayed are not delivered yet.
	Delayed int64 `json:"delayed"`
	// OldestMessageAgeSeconds is the oldest message's age; nil when empty, or where the
	// backend does not tell (SQS).
	OldestMessageAgeSeconds *int64 `json:"oldest_message_age_seconds"`
}

// QueueList is what GET /v1/queues answers: the queues the key holds anything on, by name.
type QueueList struct {
	// Queues are the queues.
	Queues []Queue `json:"queues"`
}

// ListQueuesRequest is the query of GET /v1/queues.
type ListQueuesRequest struct {
	// IncludeCounts adds each queue's Counts (include=counts).
	IncludeCounts bool
}

// GetQueueRequest is the query of GET /v1/queues/{queue_id}.
type GetQueueRequest struct {
	// IncludeCounts adds the queue's Counts (include=counts).
	IncludeCounts bool
}

// MetricsRequest is the query of GET /v1/queues/{queue_id}/metrics.
type MetricsRequest struct {
	// Since keeps the samples taken at or after it; zero: every sample kept (a day).
	Since time.Time
}

// Metrics are a queue's samples, oldest first.
type Metrics struct {
	// QueueID is the queue's UUID.
	QueueID string `json:"queue_id"`
	// IntervalSeconds is the time between two samples.
	IntervalSeconds int64 `json:"interval_seconds"`
	// Samples are the samples, oldest first.
	Samples []Sample `json:"samples"`
}

// Sample is one metrics sample. A sample the gateway could not take is a gap: every count nil,
// never zero (see Gap).
type Sample struct {
	// At is when it was taken.
	At time.Time `json:"at"`
	// Visible are the messages visible.
	Visible *int64 `json:"visible"`
	// InFlight are the messages received and not yet deleted or visible again.
	InFlight *int64 `json:"in_flight"`
	// Delayed are the messages not yet delivered because of a delay.
	Delayed *int64 `json:"delayed"`
	// OldestMessageAgeSeconds is the oldest message's age (nil also when the queue is empty).
	OldestMessageAgeSeconds *int64 `json:"oldest_message_age_seconds"`
	// RepeatedReceives are the deliveries with a receive count above 1 since the sample before.
	RepeatedReceives *int64 `json:"repeated_receives"`
	// Sends are the messages sent since the sample before.
	Sends *int64 `json:"sends"`
	// Receives are the deliveries handed out since the sample before.
	Receives *int64 `json:"receives"`
}

// Gap reports whether the gateway could not take the sample (a gap, not an empty queue).
func (s Sample) Gap() bool {
	return s.Visible == nil && s.InFlight == nil && s.Delayed == nil && s.Sends == nil && s.Receives == nil
}

// StartRedriveRequest is the body of POST /v1/queues/{queue_id}/redrive.
type StartRedriveRequest struct {
	// DestinationQueueID is the queue the messages go to; nil: each back to the queue it was
	// dead-lettered from.
	DestinationQueueID *string `json:"destination_queue_id,omitempty"`
	// MaxMessagesPerSecond (1–500) is the most messages moved a second; nil: as fast as the
	// backend moves them.
	MaxMessagesPerSecond *int `json:"max_messages_per_second,omitempty"`
}

// RedriveStatus is where a redrive task is.
type RedriveStatus string

// The statuses of a redrive task.
const (
	// RedriveRunning is moving.
	RedriveRunning RedriveStatus = "running"
	// RedriveCompleted moved every message it set out to.
	RedriveCompleted RedriveStatus = "completed"
	// RedriveCancelling was asked to stop.
	RedriveCancelling RedriveStatus = "cancelling"
	// RedriveCancelled stopped before the end.
	RedriveCancelled RedriveStatus = "cancelled"
	// RedriveFailed stopped on an error (see Failure).
	RedriveFailed RedriveStatus = "failed"
)

// RedriveTask is a task moving the messages of a dead-letter queue.
type RedriveTask struct {
	// Status is where it is.
	Status RedriveStatus `json:"status"`
	// Moved are the messages moved so far.
	Moved int64 `json:"moved"`
	// ToMove is how many it set out to move, where known.
	ToMove *int64 `json:"to_move"`
	// MaxMessagesPerSecond is its rate limit; nil for none.
	MaxMessagesPerSecond *int `json:"max_messages_per_second"`
	// DestinationQueueID is where the messages go; nil: each back where it came from.
	DestinationQueueID *string `json:"destination_queue_id"`
	// StartedAt is when it started.
	StartedAt time.Time `json:"started_at"`
	// Failure is why it failed, when it did.
	Failure *string `json:"failure"`
}

// RedriveTaskList is a dead-letter queue's latest redrive tasks (at most 10), newest first.
type RedriveTaskList struct {
	// Tasks are the tasks.
	Tasks []RedriveTask `json:"tasks"`
}

// Key is the key that called GET /v1/key, as it describes itself (never its secret).
type Key struct {
	// ID is its public id.
	ID string `json:"id"`
	// Name is its label.
	Name string `json:"name"`
	// Grants map a queue UUID (or "*") to the permissions granted there.
	Grants map[string][]string `json:"grants"`
}

// Allows reports whether the key holds the permission on the queue (its UUID in any case), by
// its grant there or on "*" (a "*" permission holds them all).
func (k *Key) Allows(queueID, permission string) bool {
	for scope, permissions := range k.Grants {
		if scope != "*" && !strings.EqualFold(scope, queueID) {
			continue
		}
		for _, held := range permissions {
			if held == permission || held == PermissionAll {
				return true
			}
		}
	}
	return false
}

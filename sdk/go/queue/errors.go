package queue

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrorCode is the stable code of an API error ({"error": {"code", "message"}}) or of a failed
// batch entry.
type ErrorCode string

// The codes the basaltic API answers, with their HTTP status.
const (
	// CodeInvalidArgument (400): the request is not valid; its message says which field.
	CodeInvalidArgument ErrorCode = "invalid_argument"
	// CodeReceiptHandleInvalid (400): not a receipt handle of this queue; nothing changed.
	CodeReceiptHandleInvalid ErrorCode = "receipt_handle_invalid"
	// CodeUnauthenticated (401): the key is missing or not valid.
	CodeUnauthenticated ErrorCode = "unauthenticated"
	// CodePermissionDenied (403): the key lacks the permission.
	CodePermissionDenied ErrorCode = "permission_denied"
	// CodeQueueNotFound (404): no such queue, or the key holds nothing on it (ids can't be
	// probed).
	CodeQueueNotFound ErrorCode = "queue_not_found"
	// CodeNotFound (404): no such route.
	CodeNotFound ErrorCode = "not_found"
	// CodeMethodNotAllowed (405): the route takes another method.
	CodeMethodNotAllowed ErrorCode = "method_not_allowed"
	// CodeRequestTimeout (408): the request body did not arrive in time.
	CodeRequestTimeout ErrorCode = "request_timeout"
	// CodeConflict (409): a queue of that name exists; a redrive runs already, or none runs.
	CodeConflict ErrorCode = "conflict"
	// CodeReceiptHandleStale (409): the receipt is not the current one (the message was
	// received again, released, deleted or purged); nothing changed.
	CodeReceiptHandleStale ErrorCode = "receipt_handle_stale"
	// CodePayloadTooLarge (413): the request body is over 3 MiB + 64 KiB.
	CodePayloadTooLarge ErrorCode = "payload_too_large"
	// CodeURITooLong (414): the request line is too long. The gateway answers it, though
	// docs/api/basaltic.md does not list it.
	CodeURITooLong ErrorCode = "uri_too_long"
	// CodeRateLimited (429): too many requests; retried by the client after Retry-After.
	CodeRateLimited ErrorCode = "rate_limited"
	// CodeOverLimit (429): too many messages in flight: delete or release some.
	CodeOverLimit ErrorCode = "over_limit"
	// CodeUnsupported (501): the gateway's backend cannot (inspect on Amazon SQS).
	CodeUnsupported ErrorCode = "unsupported"
	// CodeUnavailable (503): the queue service is unavailable; retried after Retry-After. In a
	// batch's failed entries: the backend refused that entry for now, retry it.
	CodeUnavailable ErrorCode = "unavailable"
)

// Error is an error answer of the API: its HTTP status, its code and message, and how long it
// asked to wait (Retry-After). Find it with errors.As:
//
//	var apiErr *queue.Error
//	if errors.As(err, &apiErr) && apiErr.Code == queue.CodeReceiptHandleStale { … }
//
// An answer that is not the API's error shape (a proxy's page) is an Error with an empty Code.
type Error struct {
	// Operation is the client method that got the answer ("SendMessage").
	Operation string
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the API's error code.
	Code ErrorCode
	// Message is the API's message, for people (it never repeats a value of the request).
	Message string
	// RetryAfter is the answer's Retry-After, zero when it had none.
	RetryAfter time.Duration
}

// Error answers "basaltic queue: Operation: code: message (HTTP status)".
func (e *Error) Error() string {
	code := string(e.Code)
	if code == "" {
		code = "error"
	}
	return fmt.Sprintf("basaltic queue: %s: %s: %s (HTTP %d)", e.Operation, code, e.Message, e.StatusCode)
}

// Retryable reports whether the gateway refused the call for now without applying it (429 or
// 503): the same call may succeed after RetryAfter.
func (e *Error) Retryable() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode == http.StatusServiceUnavailable
}

// CodeOf answers the API error code err carries (through wrapping), or "" when err is no API
// error answer.
func CodeOf(err error) ErrorCode {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr.Code
	}
	return ""
}

// IsCode reports whether err is (or wraps) an API error answer with the code.
func IsCode(err error, code ErrorCode) bool {
	var apiErr *Error
	return errors.As(err, &apiErr) && apiErr.Code == code
}

// ErrEmptyQueueID is answered, before any request, by a call given an empty queue id (such as
// os.Getenv("QUEUE_ID") when QUEUE_ID is not set).
var ErrEmptyQueueID = errors.New("basaltic queue: the queue id is empty (set it to the queue's UUID)")

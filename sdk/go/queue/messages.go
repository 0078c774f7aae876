package queue

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	basaltic "github.com/basaltic-sh/sdk-go"
)

// SendMessage sends a message: POST /v1/queues/{queue_id}/messages (permission send), HTTP 201
// with the message's id. It is retried only when the gateway answered 429 or 503 or the
// connection could not be made: a send that may have been applied is never sent again.
func (c *Client) SendMessage(ctx context.Context, queueID string, request *SendMessageRequest) (*SendMessageResult, error) {
	path, err := queuePath(queueID, "/messages")
	if err != nil {
		return nil, err
	}
	if request == nil {
		return nil, errors.New("basaltic queue: SendMessage: the request is nil")
	}
	var answer struct {
		Result SendMessageResult `json:"result"`
	}
	err = c.do(ctx, call{op: "SendMessage", method: http.MethodPost, path: path, body: request, out: &answer})
	if err != nil {
		return nil, err
	}
	return &answer.Result, nil
}

// ReceiveMessages receives up to MaxMessages messages with a lease: POST
// /v1/queues/{queue_id}/messages/receive (permission receive). A nil request takes every
// default (one message, the queue's wait and visibility). Without a context deadline the
// HTTP timeout is the wait (20 s when the request gives none: the queue's may be that long)
// plus basaltic.ReceiveTimeoutMargin; a context deadline is honoured as is. A receive is not
// retried after a connection lost mid-way: it may have leased messages.
func (c *Client) ReceiveMessages(ctx context.Context, queueID string, request *ReceiveRequest) (*ReceiveResult, error) {
	path, err := queuePath(queueID, "/messages/receive")
	if err != nil {
		return nil, err
	}
	if request == nil {
		request = &ReceiveRequest{}
	}
	timeout := ReceiveTimeout(request)
	var answer ReceiveResult
	err = c.do(ctx, call{
		op: "ReceiveMessages", method: http.MethodPost, path: path, body: request, out: &answer,
		attemptTimeout: timeout, httpTimeoutAtLeast: timeout,
	})
	if err != nil {
		return nil, err
	}
	if answer.Messages == nil {
		answer.Messages = []ReceivedMessage{}
	}
	return &answer, nil
}

// ReceiveTimeout answers the HTTP timeout of a receive whose context has no deadline: its
// long-poll wait (20 s when it gives none) plus basaltic.ReceiveTimeoutMargin.
func ReceiveTimeout(request *ReceiveRequest) time.Duration {
	wait := defaultReceiveWait
	if request != nil && request.WaitTimeSeconds != nil && *request.WaitTimeSeconds >= 0 {
		wait = time.Duration(*request.WaitTimeSeconds) * time.Second
	}
	return wait + basaltic.ReceiveTimeoutMargin
}

// DeleteMessage acknowledges a message with its current receipt: DELETE
// /v1/queues/{queue_id}/messages?receipt_handle=… (permission delete), the receipt URL-encoded
// here. A receipt from before another receive answers CodeReceiptHandleStale, another queue's
// or a malformed one CodeReceiptHandleInvalid, and nothing changes.
func (c *Client) DeleteMessage(ctx context.Context, queueID string, receiptHandle ReceiptHandle) error {
	path, err := queuePath(queueID, "/messages")
	if err != nil {
		return err
	}
	query := url.Values{"receipt_handle": {string(receiptHandle)}}
	return c.do(ctx, call{op: "DeleteMessage", method: http.MethodDelete, path: path, query: query, idempotent: true})
}

// ChangeMessageVisibility changes a message's lease, counted from the change (0 releases it):
// POST /v1/queues/{queue_id}/messages/visibility (permission change_visibility).
func (c *Client) ChangeMessageVisibility(ctx context.Context, queueID string, request *ChangeVisibilityRequest) error {
	path, err := queuePath(queueID, "/messages/visibility")
	if err != nil {
		return err
	}
	if request == nil {
		return errors.New("basaltic queue: ChangeMessageVisibility: the request is nil")
	}
	return c.do(ctx, call{op: "ChangeMessageVisibility", method: http.MethodPost, path: path, body: request, idempotent: true})
}

// SendMessageBatch sends up to ten messages: POST /v1/queues/{queue_id}/messages/batch
// (permission send). Check each entry: HTTP success does not mean every entry succeeded.
func (c *Client) SendMessageBatch(ctx context.Context, queueID string, request *SendMessageBatchRequest) (*BatchResult, error) {
	path, err := queuePath(queueID, "/messages/batch")
	if err != nil {
		return nil, err
	}
	if request == nil {
		return nil, errors.New("basaltic queue: SendMessageBatch: the request is nil")
	}
	return c.batch(ctx, "SendMessageBatch", path, request, false)
}

// DeleteMessageBatch deletes up to ten messages by their current receipts: POST
// /v1/queues/{queue_id}/messages/delete-batch (permission delete).
func (c *Client) DeleteMessageBatch(ctx context.Context, queueID string, request *DeleteMessageBatchRequest) (*BatchResult, error) {
	path, err := queuePath(queueID, "/messages/delete-batch")
	if err != nil {
		return nil, err
	}
	if request == nil {
		return nil, errors.New("basaltic queue: DeleteMessageBatch: the request is nil")
	}
	return c.batch(ctx, "DeleteMessageBatch", path, request, true)
}

// ChangeMessageVisibilityBatch changes up to ten leases: POST
// /v1/queues/{queue_id}/messages/visibility-batch (permission change_visibility).
func (c *Client) ChangeMessageVisibilityBatch(ctx context.Context, queueID string, request *ChangeVisibilityBatchRequest) (*BatchResult, error) {
	path, err := queuePath(queueID, "/messages/visibility-batch")
	if err != nil {
		return nil, err
	}
	if request == nil {
		return nil, errors.New("basaltic queue: ChangeMessageVisibilityBatch: the request is nil")
	}
	return c.batch(ctx, "ChangeMessageVisibilityBatch", path, request, true)
}

func (c *Client) batch(ctx context.Context, op, path string, request interface{}, idempotent bool) (*BatchResult, error) {
	var answer BatchResult
	if err := c.do(ctx, call{op: op, method: http.MethodPost, path: path, body: request, out: &answer, idempotent: idempotent}); err != nil {
		return nil, err
	}
	if answer.Successful == nil {
		answer.Successful = []BatchSuccess{}
	}
	if answer.Failed == nil {
		answer.Failed = []BatchFailure{}
	}
	return &answer, nil
}

// InspectMessages reads messages without a lease, in queue order: GET
// /v1/queues/{queue_id}/messages?max_messages=…&after=… (permission inspect). Visibility and
// receive counts do not change. Page on with After = *result.Next while Next is not nil. The
// sqs backend cannot: CodeUnsupported.
func (c *Client) InspectMessages(ctx context.Context, queueID string, request *InspectRequest) (*InspectResult, error) {
	path, err := queuePath(queueID, "/messages")
	if err != nil {
		return nil, err
	}
	query := url.Values{}
	if request != nil {
		if request.MaxMessages != 0 {
			query.Set("max_messages", strconv.Itoa(request.MaxMessages))
		}
		if request.After != "" {
			query.Set("after", request.After)
		}
	}
	var answer InspectResult
	if err := c.do(ctx, call{op: "InspectMessages", method: http.MethodGet, path: path, query: query, out: &answer, idempotent: true}); err != nil {
		return nil, err
	}
	if answer.Messages == nil {
		answer.Messages = []InspectedMessage{}
	}
	return &answer, nil
}

// PurgeQueue deletes every message of the queue, leased ones included (their receipts become
// stale): POST /v1/queues/{queue_id}/purge (permission purge).
func (c *Client) PurgeQueue(ctx context.Context, queueID string) error {
	path, err := queuePath(queueID, "/purge")
	if err != nil {
		return err
	}
	return c.do(ctx, call{op: "PurgeQueue", method: http.MethodPost, path: path, idempotent: true})
}

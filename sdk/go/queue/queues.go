package queue

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"time"
)

// CreateQueue creates a queue: POST /v1/queues (permission manage_queues on "*"), HTTP 201
// with the queue and its new UUID. A name in use answers CodeConflict. Not retried after a
// connection lost mid-way (it may have been created: a retry would answer conflict).
func (c *Client) CreateQueue(ctx context.Context, request *CreateQueueRequest) (*Queue, error) {
	if request == nil {
		return nil, errors.New("basaltic queue: CreateQueue: the request is nil")
	}
	var answer struct {
		Result Queue `json:"result"`
	}
	if err := c.do(ctx, call{op: "CreateQueue", method: http.MethodPost, path: "/v1/queues", body: request, out: &answer}); err != nil {
		return nil, err
	}
	return &answer.Result, nil
}

// ListQueues lists the queues the key holds anything on, by name: GET /v1/queues, with
// include=counts when request.IncludeCounts (request may be nil).
func (c *Client) ListQueues(ctx context.Context, request *ListQueuesRequest) (*QueueList, error) {
	query := url.Values{}
	if request != nil && request.IncludeCounts {
		query.Set("include", "counts")
	}
	var answer QueueList
	if err := c.do(ctx, call{op: "ListQueues", method: http.MethodGet, path: "/v1/queues", query: query, out: &answer, idempotent: true}); err != nil {
		return nil, err
	}
	if answer.Queues == nil {
		answer.Queues = []Queue{}
	}
	return &answer, nil
}

// GetQueue reads a queue and its settings: GET /v1/queues/{queue_id}, with include=counts when
// request.IncludeCounts (request may be nil). A queue the key holds nothing on answers
// CodeQueueNotFound, as a missing one does.
func (c *Client) GetQueue(ctx context.Context, queueID string, request *GetQueueRequest) (*Queue, error) {
	path, err := queuePath(queueID, "")
	if err != nil {
		return nil, err
	}
	query := url.Values{}
	if request != nil && request.IncludeCounts {
		query.Set("include", "counts")
	}
	var answer struct {
		Result Queue `json:"result"`
	}
	if err := c.do(ctx, call{op: "GetQueue", method: http.MethodGet, path: path, query: query, out: &answer, idempotent: true}); err != nil {
		return nil, err
	}
	return &answer.Result, nil
}

// UpdateQueue changes the settings given and keeps the others: PATCH /v1/queues/{queue_id}
// (permission manage_queues; a dead-letter queue takes send on it).
func (c *Client) UpdateQueue(ctx context.Context, queueID string, request *UpdateQueueRequest) (*Queue, error) {
	path, err := queuePath(queueID, "")
	if err != nil {
		return nil, err
	}
	if request == nil {
		return nil, errors.New("basaltic queue: UpdateQueue: the request is nil")
	}
	var answer struct {
		Result Queue `json:"result"`
	}
	if err := c.do(ctx, call{op: "UpdateQueue", method: http.MethodPatch, path: path, body: request, out: &answer, idempotent: true}); err != nil {
		return nil, err
	}
	return &answer.Result, nil
}

// DeleteQueue deletes the queue and its messages: DELETE /v1/queues/{queue_id} (permission
// manage_queues), HTTP 204.
func (c *Client) DeleteQueue(ctx context.Context, queueID string) error {
	path, err := queuePath(queueID, "")
	if err != nil {
		return err
	}
	return c.do(ctx, call{op: "DeleteQueue", method: http.MethodDelete, path: path, idempotent: true})
}

// GetQueueMetrics reads the samples the gateway took of the queue, oldest first: GET
// /v1/queues/{queue_id}/metrics?since=RFC3339 (permission read_metrics). request may be nil.
func (c *Client) GetQueueMetrics(ctx context.Context, queueID string, request *MetricsRequest) (*Metrics, error) {
	path, err := queuePath(queueID, "/metrics")
	if err != nil {
		return nil, err
	}
	query := url.Values{}
	if request != nil && !request.Since.IsZero() {
		query.Set("since", request.Since.UTC().Format(time.RFC3339Nano))
	}
	var answer Metrics
	if err := c.do(ctx, call{op: "GetQueueMetrics", method: http.MethodGet, path: path, query: query, out: &answer, idempotent: true}); err != nil {
		return nil, err
	}
	if answer.Samples == nil {
		answer.Samples = []Sample{}
	}
	return &answer, nil
}

// StartRedrive starts moving the messages of this dead-letter queue back to the queues they
// were dead-lettered from, or to request.DestinationQueueID: POST
// /v1/queues/{queue_id}/redrive (permission manage_queues, on the destination too), HTTP 201
// with the task. One runs at a time (CodeConflict). request may be nil.
func (c *Client) StartRedrive(ctx context.Context, queueID string, request *StartRedriveRequest) (*RedriveTask, error) {
	path, err := queuePath(queueID, "/redrive")
	if err != nil {
		return nil, err
	}
	if request == nil {
		request = &StartRedriveRequest{}
	}
	var answer struct {
		Result RedriveTask `json:"result"`
	}
	if err := c.do(ctx, call{op: "StartRedrive", method: http.MethodPost, path: path, body: request, out: &answer}); err != nil {
		return nil, err
	}
	return &answer.Result, nil
}

// ListRedrives lists the latest redrive tasks of this dead-letter queue (at most 10), newest
// first: GET /v1/queues/{queue_id}/redrive (permission manage_queues).
func (c *Client) ListRedrives(ctx context.Context, queueID string) (*RedriveTaskList, error) {
	path, err := queuePath(queueID, "/redrive")
	if err != nil {
		return nil, err
	}
	var answer RedriveTaskList
	if err := c.do(ctx, call{op: "ListRedrives", method: http.MethodGet, path: path, out: &answer, idempotent: true}); err != nil {
		return nil, err
	}
	if answer.Tasks == nil {
		answer.Tasks = []RedriveTask{}
	}
	return &answer, nil
}

// CancelRedrive stops the running redrive of this dead-letter queue (what it moved stays
// moved): POST /v1/queues/{queue_id}/redrive/cancel (permission manage_queues). None running
// answers CodeConflict.
func (c *Client) CancelRedrive(ctx context.Context, queueID string) (*RedriveTask, error) {
	path, err := queuePath(queueID, "/redrive/cancel")
	if err != nil {
		return nil, err
	}
	var answer struct {
		Result RedriveTask `json:"result"`
	}
	if err := c.do(ctx, call{op: "CancelRedrive", method: http.MethodPost, path: path, out: &answer}); err != nil {
		return nil, err
	}
	return &answer.Result, nil
}

// DescribeKey answers the key the client calls with, as it describes itself (id, name,
// grants; never its secret): GET /v1/key, any valid key. A client can tell from it what it
// cannot do before it tries.
func (c *Client) DescribeKey(ctx context.Context) (*Key, error) {
	var answer struct {
		Result Key `json:"result"`
	}
	if err := c.do(ctx, call{op: "DescribeKey", method: http.MethodGet, path: "/v1/key", out: &answer, idempotent: true}); err != nil {
		return nil, err
	}
	return &answer.Result, nil
}

// PauseDelivery pauses the queue's delivery: POST /v1/queues/{queue_id}/pause (permission
// manage_queues). Receives in every API get no message and push posts nothing until
// ResumeDelivery; sends go on. Pausing a paused queue keeps its PausedSince.
func (c *Client) PauseDelivery(ctx context.Context, queueID string) (*Queue, error) {
	return c.setDelivery(ctx, queueID, "PauseDelivery", "/pause")
}

// ResumeDelivery ends the queue's pause: POST /v1/queues/{queue_id}/resume (permission
// manage_queues).
func (c *Client) ResumeDelivery(ctx context.Context, queueID string) (*Queue, error) {
	return c.setDelivery(ctx, queueID, "ResumeDelivery", "/resume")
}

func (c *Client) setDelivery(ctx context.Context, queueID, op, step string) (*Queue, error) {
	path, err := queuePath(queueID, step)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Result Queue `json:"result"`
	}
	if err := c.do(ctx, call{op: op, method: http.MethodPost, path: path, out: &answer, idempotent: true}); err != nil {
		return nil, err
	}
	return &answer.Result, nil
}

package basaltic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultEndpoint is the gateway's address when neither an option, BASALTIC_ENDPOINT nor the
// config file names one: a gateway on this machine, as the basaltic CLI assumes.
const DefaultEndpoint = "http://127.0.0.1:8787"

// DefaultTimeout bounds one attempt of a call other than a receive when its context has no
// deadline. A receive's attempt gets its long-poll wait plus ReceiveTimeoutMargin instead.
const DefaultTimeout = 30 * time.Second

// ReceiveTimeoutMargin is what a receive's HTTP timeout adds to its long-poll wait, so the
// client never gives up on a long poll the gateway is still honouring.
const ReceiveTimeoutMargin = 10 * time.Second

// The environment variables NewConfig reads: the ones the basaltic CLI reads, plus
// EnvAPIKeyFile, the environment's form of the CLI's --api-key-file flag.
const (
	// EnvEndpoint is the gateway's base URL (default DefaultEndpoint).
	EnvEndpoint = "BASALTIC_ENDPOINT"
	// EnvAPIKey is the API key ("sqsgw_…"), sent as "Authorization: Bearer <key>".
	EnvAPIKey = "BASALTIC_API_KEY"
	// EnvAPIKeyFile names a file whose first line is the API key; it beats EnvAPIKey, as the
	// CLI's --api-key-file beats BASALTIC_API_KEY.
	EnvAPIKeyFile = "BASALTIC_API_KEY_FILE"
	// EnvAccount is the account (one per gateway: carried, not needed).
	EnvAccount = "BASALTIC_ACCOUNT"
	// EnvRegion is the region (one per gateway: carried, not needed).
	EnvRegion = "BASALTIC_REGION"
	// EnvConfigFile names the config file (default ~/.basaltic/config.toml).
	EnvConfigFile = "BASALTIC_CONFIG_FILE"
)

// ErrNoAPIKey is what NewConfig answers (wrapped, with where a key may come from) when no API
// key is found: test for it with errors.Is.
var ErrNoAPIKey = errors.New("no API key")

// Config is what a service client needs: where the gateway is, the key that calls it, and how
// calls are made. Make one with NewConfig, or as a literal: queue.New fills in what is left
// zero (DefaultEndpoint, a default HTTP client, DefaultTimeout, the default RetryPolicy).
//
// Printing a Config (%v, %+v, %#v) never prints its APIKey.
type Config struct {
	// Endpoint is the gateway's base URL, http or https, such as "http://127.0.0.1:8787"; a
	// path is kept as a prefix (a gateway behind a proxy at /basaltic).
	Endpoint string
	// APIKey is the basaltic API key, sent as a Bearer token.
	APIKey string
	// Account is the account the key belongs to. One gateway is one account: the value is
	// carried for the program's own use and not sent.
	Account string
	// Region is the region of the gateway. One gateway is one region: carried, not sent.
	Region string
	// HTTPClient makes the calls. Nil: a client of its own that follows no redirects (the API
	// answers none, and a redirect would carry the key elsewhere). Its Timeout, when set, is
	// raised for a receive to the long-poll wait plus ReceiveTimeoutMargin.
	HTTPClient *http.Client
	// Timeout bounds one attempt of a call other than a receive whose context has no deadline
	// (zero: DefaultTimeout). A context's deadline always wins.
	Timeout time.Duration
	// Retry is how calls the gateway refused for now (429, 503) or that did not reach it are
	// retried; the zero value is DefaultRetryPolicy.
	Retry RetryPolicy
}

// RetryPolicy is how often and how long a call is retried. Retried are: any call the gateway
// answered 429 (rate_limited, over_limit) or 503 (unavailable), which it did not apply; any
// call whose connection could not be made, so nothing was sent; and the idempotent calls
// (reads, deletes, visibility changes, settings changes, purge) on any other connection error.
// A send, receive, queue creation or redrive whose connection failed after the request left is
// never retried: it may have been applied.
type RetryPolicy struct {
	// MaxAttempts is the most attempts of one call, the first included (zero: 3; 1 disables
	// retries).
	MaxAttempts int
	// BaseDelay is the first backoff (zero: 200 ms); each attempt doubles it, up to MaxDelay,
	// and the wait is drawn at random between half of it and all of it (jitter).
	BaseDelay time.Duration
	// MaxDelay caps a backoff (zero: 5 s).
	MaxDelay time.Duration
	// MaxRetryAfter is the longest Retry-After the client waits out by itself (zero: 30 s);
	// an answer asking for longer is returned at once, with its RetryAfter, for the caller to
	// decide. A context deadline that would pass before the wait ends also returns at once.
	MaxRetryAfter time.Duration
}

// DefaultRetryPolicy is the RetryPolicy a zero RetryPolicy stands for.
var DefaultRetryPolicy = RetryPolicy{
	MaxAttempts:   3,
	BaseDelay:     200 * time.Millisecond,
	MaxDelay:      5 * time.Second,
	MaxRetryAfter: 30 * time.Second,
}

// WithDefaults answers the policy with each zero field replaced by DefaultRetryPolicy's.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = DefaultRetryPolicy.MaxAttempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultRetryPolicy.BaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultRetryPolicy.MaxDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultRetryPolicy.MaxRetryAfter
	}
	return p
}

// String describes the config without its API key (only whether one is set).
func (c Config) String() string {
	key := "unset"
	if c.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("basaltic.Config{Endpoint: %q, APIKey: %s, Account: %q, Region: %q}",
		RedactURL(c.Endpoint), key, c.Account, c.Region)
}

// GoString is String: %#v never prints the API key either.
func (c Config) GoString() string { return c.String() }

// Option changes what NewConfig loads; options beat the environment and the config file.
type Option func(*loadOptions)

type loadOptions struct {
	endpoint, apiKey, account, region *string
	configFile                        *string
	httpClient                        *http.Client
	timeout                           time.Duration
	retry                             *RetryPolicy
	lookupEnv                         func(string) (string, bool)
}

// WithEndpoint sets the gateway's base URL, whatever BASALTIC_ENDPOINT or the file say.
func WithEndpoint(endpoint string) Option { return func(o *loadOptions) { o.endpoint = &endpoint } }

// WithAPIKey sets the API key, whatever the environment or the file say.
func WithAPIKey(key string) Option { return func(o *loadOptions) { o.apiKey = &key } }

// WithAccount sets the account.
func WithAccount(account string) Option { return func(o *loadOptions) { o.account = &account } }

// WithRegion sets the region.
func WithRegion(region string) Option { return func(o *loadOptions) { o.region = &region } }

// WithConfigFile reads the config file at path (which must exist) instead of the one
// BASALTIC_CONFIG_FILE names or ~/.basaltic/config.toml.
func WithConfigFile(path string) Option { return func(o *loadOptions) { o.configFile = &path } }

// WithHTTPClient sets the HTTP client the calls are made with.
func WithHTTPClient(client *http.Client) Option {
	return func(o *loadOptions) { o.httpClient = client }
}

// WithTimeout sets Config.Timeout, one attempt's bound when a call's context has no deadline.
func WithTimeout(timeout time.Duration) Option {
	return func(o *loadOptions) { o.timeout = timeout }
}

// WithRetryPolicy sets how calls are retried (its zero fields take DefaultRetryPolicy's).
func WithRetryPolicy(policy RetryPolicy) Option {
	return func(o *loadOptions) { o.retry = &policy }
}

// WithLookupEnv reads the environment through lookup instead of os.LookupEnv (for tests, or a
// program that keeps its settings elsewhere).
func WithLookupEnv(lookup func(string) (string, bool)) Option {
	return func(o *loadOptions) { o.lookupEnv = lookup }
}

// NewConfig loads the config the way the basaltic CLI does, each value from the first place
// that has it:
//
//   - Endpoint: WithEndpoint, BASALTIC_ENDPOINT, the config file's endpoint, DefaultEndpoint.
//   - APIKey: WithAPIKey, the first line of the file BASALTIC_API_KEY_FILE names,
//     BASALTIC_API_KEY, the config file's api_key. None is an error wrapping ErrNoAPIKey.
//   - Account and Region: WithAccount/WithRegion, BASALTIC_ACCOUNT/BASALTIC_REGION, the config
//     file's account/region.
//
// The config file is BASALTIC_CONFIG_FILE's (or WithConfigFile's), which must exist, else
// ~/.basaltic/config.toml if it exists. As the CLI, NewConfig reads it only when one was named
// or when the endpoint or the key is still missing. Its top-level `key = "value"` lines are
// read (TOML basic and literal strings); other values are ignored, tables end what is read.
// An empty variable counts as unset. Nothing is sent anywhere: ctx bounds nothing today and is
// taken for the calls' symmetry.
func NewConfig(ctx context.Context, options ...Option) (Config, error) {
	_ = ctx
	var o loadOptions
	for _, option := range options {
		option(&o)
	}
	lookup := o.lookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	env := func(name string) string {
		value, _ := lookup(name)
		return strings.TrimSpace(value)
	}
	pick := func(override *string, fromEnv string) string {
		if override != nil {
			return *override
		}
		return fromEnv
	}

	cfg := Config{HTTPClient: o.httpClient, Timeout: o.timeout}
	if o.retry != nil {
		cfg.Retry = *o.retry
	}
	cfg.Endpoint = pick(o.endpoint, env(EnvEndpoint))
	cfg.Account = pick(o.account, env(EnvAccount))
	cfg.Region = pick(o.region, env(EnvRegion))
	if o.apiKey != nil {
		cfg.APIKey = *o.apiKey
	} else if path := env(EnvAPIKeyFile); path != "" {
		key, err := readKeyFile(path)
		if err != nil {
			return Config{}, err
		}
		cfg.APIKey = key
	} else {
		cfg.APIKey = env(EnvAPIKey)
	}

	// The config file, as the CLI reads it: when named, or when something is still missing.
	var filePath string
	explicit := false
	switch {
	case o.configFile != nil:
		filePath, explicit = *o.configFile, true
	case env(EnvConfigFile) != "":
		filePath, explicit = env(EnvConfigFile), true
	default:
		if home := env("HOME"); home != "" {
			filePath = filepath.Join(home, ".basaltic", "config.toml")
		} else if o.lookupEnv == nil {
			// Where HOME is not the way (Windows' USERPROFILE).
			if home, err := os.UserHomeDir(); err == nil {
				filePath = filepath.Join(home, ".basaltic", "config.toml")
			}
		}
	}
	if filePath != "" && (explicit || cfg.Endpoint == "" || cfg.APIKey == "") {
		values, err := readConfigFile(filePath)
		switch {
		case err == nil:
			fill := func(field *string, name string) {
				if *field == "" {
					*field = values[name]
				}
			}
			fill(&cfg.Endpoint, "endpoint")
			fill(&cfg.APIKey, "api_key")
			fill(&cfg.Account, "account")
			fill(&cfg.Region, "region")
		case errors.Is(err, os.ErrNotExist) && !explicit:
		default:
			return Config{}, fmt.Errorf("basaltic: config file %s: %w", filePath, err)
		}
	}

	if cfg.Endpoint == "" {
		cfg.Endpoint = DefaultEndpoint
	}
	if err := CheckEndpoint(cfg.Endpoint); err != nil {
		return Config{}, err
	}
	if cfg.APIKey == "" {
		where := "~/.basaltic/config.toml"
		if filePath != "" {
			where = filePath
		}
		return Config{}, fmt.Errorf("basaltic: %w: set %s, %s (a file whose first line is the key), or api_key in the config file (%s)",
			ErrNoAPIKey, EnvAPIKey, EnvAPIKeyFile, where)
	}
	return cfg, nil
}

// readKeyFile answers the first line of the file at path, trimmed; an unreadable file or an
// empty first line is an error.
func readKeyFile(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("basaltic: %s: %w", EnvAPIKeyFile, err)
	}
	line := string(data)
	if end := strings.IndexByte(line, '\n'); end >= 0 {
		line = line[:end]
	}
	line = strings.TrimSpace(line)
	if line == "" {
		return "", fmt.Errorf("basaltic: %s %s: the file's first line is empty", EnvAPIKeyFile, path)
	}
	return line, nil
}

// CheckEndpoint answers an error unless endpoint is an absolute http or https URL with a host
// and without a query or fragment.
func CheckEndpoint(endpoint string) error {
	parsed, err := url.Parse(endpoint)
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" ||
		parsed.RawQuery != "" || parsed.Fragment != "" {
		return fmt.Errorf("basaltic: the endpoint %q is not an http(s) URL such as %s", RedactURL(endpoint), DefaultEndpoint)
	}
	return nil
}

// RedactURL answers rawURL without the user:password@ of its authority (an endpoint may carry
// credentials for a proxy in front of the gateway), for messages and logs.
func RedactURL(rawURL string) string {
	schemeEnd := strings.Index(rawURL, "://")
	if schemeEnd < 0 {
		return rawURL
	}
	start := schemeEnd + len("://")
	end := len(rawURL)
	if i := strings.IndexAny(rawURL[start:], "/?#"); i >= 0 {
		end = start + i
	}
	if at := strings.LastIndexByte(rawURL[start:end], '@'); at >= 0 {
		return rawURL[:start] + rawURL[start+at+1:]
	}
	return rawURL
}

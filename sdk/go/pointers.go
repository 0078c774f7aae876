package basaltic

// Int answers a pointer to v: the optional integer fields of requests are pointers, so that an
// unset one is not sent and a zero one (a wait of 0 seconds) is.
func Int(v int) *int { return &v }

// String answers a pointer to v, for the optional string fields of requests.
func String(v string) *string { return &v }

// Bool answers a pointer to v, for the optional boolean fields of requests.
func Bool(v bool) *bool { return &v }

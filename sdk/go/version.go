package basaltic

// Version is this module's version, sent in the User-Agent of every call.
const Version = "0.1.0"

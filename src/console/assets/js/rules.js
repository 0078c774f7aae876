// Why: the forms refuse what the API would refuse before any request is sent: whole numbers in
// range, and message attributes checked by the API's own rules.

import { InputError } from './api.js';
import { utf8Length } from './format.js';

/** A queue's number settings as the API names them, with its ranges (the create and edit forms). */
export const SETTINGS = [
  { key: 'delay_seconds', label: 'Delay (seconds)', min: 0, max: 900 },
  { key: 'receive_wait_time_seconds', label: 'Receive wait (seconds)', min: 0, max: 20 },
  { key: 'visibility_timeout_seconds', label: 'Visibility timeout (seconds)', min: 0, max: 43200 },
  { key: 'max_message_bytes', label: 'Largest message (bytes)', min: 1024, max: 262144 },
  { key: 'retention_seconds', label: 'Retention (seconds)', min: 60, max: 1209600 },
];

/** A whole number as typed, its range left to the API (whose refusal then shows in its words). */
export function whole(text, label) {
  const trimmed = String(text).trim();
  if (!/^\d+$/.test(trimmed)) throw new InputError(`${label} must be a whole number`);
  return Number(trimmed);
}

export function parseWhole(text, label, min, max) {
  const trimmed = String(text).trim();
  if (!/^\d+$/.test(trimmed)) throw new InputError(`${label} must be a whole number from ${min} to ${max}`);
  const n = Number(trimmed);
  if (n < min || n > max) throw new InputError(`${label} must be from ${min} to ${max} (got ${n})`);
  return n;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** A decimal as SQS takes it: at most 38 significant digits, zero or 10^-128 to 10^126. */
export function validNumber(text) {
  const m = /^[+-]?(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!m) return false;
  const whole = m[1];
  const fraction = m[2] || '';
  if (whole.length + fraction.length === 0) return false;
  const exponent = m[3] === undefined ? 0 : Number(m[3]);
  if (!Number.isFinite(exponent) || Math.abs(exponent) >= 1e6) return false;
  const digits = whole + fraction;
  const first = digits.search(/[^0]/);
  if (first < 0) return true; // zero
  const significant = digits.replace(/0+$/, '').length - first;
  if (significant > 38) return false;
  const leading = whole.length - 1 - first + exponent;
  const exactlyMax = leading === 126 && significant === 1 && digits[first] === '1';
  return (leading >= -128 && leading < 126) || exactlyMax;
}

/** Checks the attribute rows as the API would and answers the request's attributes. */
export function checkAttributes(rows) {
  const attributes = {};
  rows.forEach((row, index) => {
    const name = row.name.value;
    const type = row.type.value;
    const value = row.value.value;
    const at = `attribute ${index + 1}`;
    const nameBytes = utf8Length(name);
    if (nameBytes < 1 || nameBytes > 256) throw new InputError(`${at}: a name is 1 to 256 bytes of UTF-8 (this one is ${nameBytes})`);
    const lower = name.toLowerCase();
    for (const reserved of ['aws.', 'amazon.', 'sqsgw.']) {
      if (lower.startsWith(reserved)) throw new InputError(`${at}: names starting with "${name.slice(0, reserved.length)}" are reserved`);
    }
    if (Object.prototype.hasOwnProperty.call(attributes, name)) throw new InputError(`${at}: the name "${name}" is given twice`);
    let bytes;
    if (type === 'Binary') {
      if (!BASE64.test(value)) throw new InputError(`${at}: a Binary value is standard base64 (A–Z, a–z, 0–9, +, /, padded with =)`);
      bytes = atob(value).length;
    } else {
      bytes = utf8Length(value);
      if (type === 'Number' && !validNumber(value)) throw new InputError(`${at}: "${value}" is not a number (at most 38 significant digits, 10^-128 to 10^126)`);
    }
    if (bytes < 1 || bytes > 1024) throw new InputError(`${at}: a value is 1 to 1024 bytes${type === 'Binary' ? ' once decoded' : ''} (this one is ${bytes})`);
    attributes[name] = { type, value };
  });
  return attributes;
}

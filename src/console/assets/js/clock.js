// Why: the times the console draws are in one zone the user picks (local by default, or UTC),
// kept for this browser tab only.

const ZONE_STORAGE = 'sqsgw.console.zone';

export const usesUtc = () => sessionStorage.getItem(ZONE_STORAGE) === 'utc';

export function setUtc(on) {
  if (on) sessionStorage.setItem(ZONE_STORAGE, 'utc');
  else sessionStorage.removeItem(ZONE_STORAGE);
}

/** The zone times are shown in, by name: `UTC`, or the browser's own zone. */
export function zoneName() {
  if (usesUtc()) return 'UTC';
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time';
}

/** A time of day (24-hour) in the chosen zone, with seconds unless `seconds` is false. */
export function fmtClock(t, seconds = true) {
  return new Date(t).toLocaleTimeString(undefined, {
    hour: '2-digit', minute: '2-digit', second: seconds ? '2-digit' : undefined, hourCycle: 'h23',
    timeZone: usesUtc() ? 'UTC' : undefined,
  });
}

/** How far the chosen zone is ahead of UTC at `t`, in ms (ticks fall on its round times). */
export const zoneOffsetMs = (t) => (usesUtc() ? 0 : -new Date(t).getTimezoneOffset() * 60000);

/** Forgets the choice (signing out forgets everything the console kept). */
export function forgetZone() {
  sessionStorage.removeItem(ZONE_STORAGE);
}

/** A date and time (24-hour, with seconds) in the chosen zone, followed by the zone's name. */
export function fmtWhen(t) {
  const date = new Date(t);
  if (Number.isNaN(date.getTime())) return String(t);
  const text = date.toLocaleString(undefined, {
    year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit',
    hourCycle: 'h23', timeZone: usesUtc() ? 'UTC' : undefined,
  });
  return `${text} ${zoneName()}`;
}

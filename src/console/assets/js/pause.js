// Why: pausing a queue's delivery from its page (POST /v1/queues/{id}/pause and /resume): the
// control, confirmed before a pause because consumers and push then get nothing, and the banner
// and list marker that say a queue is paused and since when (in the console's chosen zone).

import { h, fill, guarded } from './dom.js';
import { reasonFor } from './session.js';
import { api, queuePath, describe } from './api.js';
import { showError, clearAlert, say } from './notices.js';
import { openDialog } from './dialog.js';
import { fmtWhen } from './clock.js';

/** What pausing does, as the confirmation and the banner say it. */
const EFFECT = 'Consumers get no message (every receive answers empty after its wait) and push subscriptions post nothing; sends go on, and the messages wait in the queue.';

/** A `<time>` of when the queue was paused, in the chosen zone. */
const sinceEl = (q) => h('time', { datetime: q.paused_since, title: q.paused_since }, fmtWhen(q.paused_since));

/** The list's marker of a paused queue (null when it is not paused). */
export function pausedMarker(q) {
  if (!q.delivery_paused) return null;
  return h('span', {
    class: 'badge paused', testid: 'paused-marker',
    title: q.paused_since ? `delivery paused since ${fmtWhen(q.paused_since)}` : 'delivery paused',
  }, 'paused');
}

/**
 * The queue page's pause control and banner, kept in step with ctx.q: answers
 * { control, banner, update }; update() redraws both after ctx.q changes. onChange(queue) runs
 * with the API's answer to a pause or a resume.
 */
export function pauseControls(ctx, onChange) {
  const reason = reasonFor(ctx.q, 'manage_queues');
  const button = h('button', { type: 'button', class: 'secondary' });
  const banner = h('div', { testid: 'paused-banner', class: 'note warn paused-banner', role: 'status', hidden: true });
  function update() {
    const q = ctx.q;
    const paused = Boolean(q.delivery_paused);
    button.textContent = paused ? 'Resume delivery' : 'Pause delivery';
    button.dataset.testid = paused ? 'resume-delivery' : 'pause-delivery';
    button.classList.toggle('secondary', !paused);
    banner.hidden = !paused;
    if (paused) {
      fill(banner,
        h('strong', {}, 'Delivery paused'),
        q.paused_since ? [' since ', sinceEl(q)] : null,
        '. ', EFFECT);
    } else {
      fill(banner);
    }
  }
  async function call(action) {
    const answer = await api('POST', queuePath(ctx.q.id, `/${action}`));
    ctx.q = { ...answer.result, counts: ctx.q.counts };
    update();
    onChange(ctx.q);
  }
  button.addEventListener('click', async () => {
    clearAlert();
    if (!ctx.q.delivery_paused) {
      confirmPause(ctx.q, button, () => call('pause').then(() => say(`Paused delivery of ${ctx.q.name}.`)));
      return;
    }
    button.disabled = true;
    try {
      await call('resume');
      say(`Resumed delivery of ${ctx.q.name}.`);
    } catch (err) {
      showError(err);
    } finally {
      button.disabled = false;
      button.focus();
    }
  });
  update();
  return { control: guarded(button, reason), banner, update };
}

function confirmPause(q, opener, pause) {
  const ok = h('button', { type: 'submit', testid: 'pause-confirm' }, 'Pause delivery');
  const { close, error } = openDialog({
    opener,
    title: `Pause delivery of ${q.name}?`,
    testid: 'pause-dialog',
    build: (closeIt) => {
      const form = h('form', { novalidate: true },
        h('p', {}, EFFECT),
        h('p', {}, 'It lasts until Resume delivery, for every API at once, and outlives restarts; pausing and resuming are lines of the queue’s audit trail.'),
        h('div', { class: 'actions' }, ok,
          h('button', { type: 'button', class: 'secondary', testid: 'pause-cancel', onclick: closeIt }, 'Cancel')));
      form.addEventListener('submit', async (event) => {
        event.preventDefault();
        error.textContent = '';
        ok.disabled = true;
        try {
          await pause();
          close();
        } catch (err) {
          error.textContent = describe(err);
          ok.disabled = false;
        }
      });
      return form;
    },
  });
}

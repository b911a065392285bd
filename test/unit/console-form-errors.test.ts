/** The console's form errors: which field a 422 item lands beside, and the cron preview's runs. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nextRuns } from '../../src/domain/signals.ts';
import { ApiError } from '../../web/src/lib/api-error.ts';
import { fieldOf, formErrors } from '../../web/src/lib/form-errors.ts';

const SIGNALS = ['schedule', 'schedule.cron', 'schedule.timezone', 'notification_severities', 'model'];

test('a loc lands on the longest field it starts with, only under body', () => {
  assert.equal(fieldOf(['body', 'schedule', 'cron'], SIGNALS), 'schedule.cron');
  assert.equal(fieldOf(['body', 'schedule', 'type'], SIGNALS), 'schedule');
  assert.equal(fieldOf(['body', 'notification_severities', 2], SIGNALS), 'notification_severities');
  assert.equal(fieldOf(['body', 0, 'role'], ['0.role', 'role']), '0.role');
  assert.equal(fieldOf(['body'], SIGNALS), null);
  assert.equal(fieldOf(['path', 'model'], SIGNALS), null);
  assert.equal(fieldOf(['body', 'modelx'], SIGNALS), null);
});

test('422 items go beside their fields (the first per field), the rest to the form', () => {
  const err = new ApiError(422, 'ignored', [
    { loc: ['body', 'schedule', 'cron'], msg: 'Invalid cron expression: bad minute' },
    { loc: ['body', 'schedule', 'cron'], msg: 'a second message' },
    { loc: ['body', 'model'], msg: 'Too long' },
    { loc: ['path', 'run_id'], msg: 'Not a UUID' },
    { loc: ['body', 'unknown'], msg: 'Extra' },
  ]);
  assert.deepEqual(formErrors(err, SIGNALS), {
    fields: { 'schedule.cron': 'Invalid cron expression: bad minute', model: 'Too long' },
    general: 'Not a UUID; Extra',
  });
});

test('an error without items (403, 409, a network fault) is the form’s, as the server worded it', () => {
  assert.deepEqual(formErrors(new ApiError(409, 'A group with this name already exists'), ['name']), {
    fields: {},
    general: 'A group with this name already exists',
  });
  assert.deepEqual(formErrors(new Error('offline'), ['name']), { fields: {}, general: 'offline' });
});

test('the preview’s next runs are the cron times in the chosen zone', () => {
  const from = new Date('2026-03-28T12:00:00Z');
  // 09:00 in Paris: 08:00 UTC before the change to summer time on 29 March 2026, 07:00 after.
  assert.deepEqual(
    nextRuns('0 9 * * *', 'Europe/Paris', 3, from).map((d) => d.toISOString()),
    ['2026-03-29T07:00:00.000Z', '2026-03-30T07:00:00.000Z', '2026-03-31T07:00:00.000Z'],
  );
  assert.deepEqual(
    nextRuns(' 30  */12 * * 1-5 ', 'UTC', 2, from).map((d) => d.toISOString()),
    ['2026-03-30T00:30:00.000Z', '2026-03-30T12:30:00.000Z'],
  );
});

/**
 * `npm run docs:screenshot`: the README's pictures of the trace view (docs/console-trace.png) and of
 * an annotation queue (docs/console-queue.png) and of a dashboard (docs/console-dashboard.png), taken
 * with the browser tests' own server, data and Chromium.
 */
import path from 'node:path';
import { launchChromium, signIn, startConsoleServer } from '../helpers/browser.ts';
import { seedConsoleWorld } from '../helpers/console-data.ts';

const OUT = path.join(import.meta.dirname, '../../docs/console-trace.png');
const QUEUE_OUT = path.join(import.meta.dirname, '../../docs/console-queue.png');
const DASHBOARD_OUT = path.join(import.meta.dirname, '../../docs/console-dashboard.png');

const s = await startConsoleServer('sqlite');
const browser = await launchChromium();
try {
  const w = await seedConsoleWorld((m, u, b) => s.call(m, u, b));
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  const base = `/projects/${w.projectId}/log_streams/${w.logStreamId}`;
  await page.goto(`${s.url}${base}/traces/${w.chatTraceIds[0]}`);
  await signIn(page, s.admin.email, s.admin.password);
  await page
    .getByRole('tree')
    .getByRole('treeitem', { name: /respond/ })
    .click();
  await page.locator('.panel .message.role-assistant').last().waitFor();
  await page.screenshot({ path: OUT });
  console.log(`wrote ${path.relative(process.cwd(), OUT)}`);

  // A queue of the chat's turns on three templates, its first record half annotated.
  const api = async (method: string, url: string, body?: unknown) => (await s.call(method, url, body)).body;
  const P = `/v2/projects/${w.projectId}`;
  const templates = [
    { name: 'helpful', type: 'thumbs' },
    { name: 'quality', type: 'stars' },
    { name: 'tone', type: 'categorical', options: ['friendly', 'neutral', 'curt'] },
  ];
  const ids: string[] = [];
  for (const t of templates) ids.push((await api('POST', `${P}/annotation_templates`, t)).id);
  const q = await api('POST', `${P}/annotation_queues`, {
    name: 'Support answers',
    description: 'Is the answer right, and kind?',
    template_ids: ids,
    user_ids: [s.adminId],
  });
  await api('POST', `${P}/annotation_queues/${q.id}/records`, { record_ids: w.chatTraceIds });
  await page.goto(`${s.url}/projects/${w.projectId}/annotation_queues/${q.id}`);
  await page.locator('.annotation-field').first().waitFor();
  await page.keyboard.press('y');
  await page.keyboard.press('4');
  await page.locator('.save-state', { hasText: 'Saved' }).nth(1).waitFor();
  await page.screenshot({ path: QUEUE_OUT });
  console.log(`wrote ${path.relative(process.cwd(), QUEUE_OUT)}`);
  const trends = `/v2/projects/${w.projectId}/log_streams/${w.logStreamId}/trends`;
  const d = await s.call('PUT', trends, {
    relative_time: 'last_6_hours',
    interval_mins: 15,
    group_by: 'user_metadata/customer',
  });
  for (const widget of [
    { name: 'Average latency', type: 'line_chart', metric: 'duration_ns', aggregation: 'Average' },
    { name: 'Records', type: 'number', metric: 'duration_ns', aggregation: 'Count' },
    { name: 'Records per 15 minutes', type: 'bar_chart', metric: 'duration_ns', aggregation: 'Count' },
    { name: 'p95 latency', type: 'table', metric: 'duration_ns', aggregation: 'P95' },
  ])
    await s.call('POST', `${trends}/${d.body.id}/widgets`, widget);
  await page.goto(`${s.url}${base}/dashboards/${d.body.id}`);
  await page.locator('.dashboard[data-data-ready="true"]').waitFor();
  await page.locator('.chart[data-drawn="true"]').nth(1).waitFor();
  await page.screenshot({ path: DASHBOARD_OUT });
  console.log(`wrote ${path.relative(process.cwd(), DASHBOARD_OUT)}`);
} finally {
  await browser.close();
  await s.close();
}

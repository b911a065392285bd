/**
 * `npm run docs:screenshot`: the README's picture of the trace view (docs/console-trace.png), taken
 * with the browser tests' own server, data and Chromium.
 */
import path from 'node:path';
import { launchChromium, signIn, startConsoleServer } from '../helpers/browser.ts';
import { seedConsoleWorld } from '../helpers/console-data.ts';

const OUT = path.join(import.meta.dirname, '../../docs/console-trace.png');

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
} finally {
  await browser.close();
  await s.close();
}

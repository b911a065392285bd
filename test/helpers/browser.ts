/**
 * Browser tests: a real Spanbase listening on a port (the console built from source when stale),
 * Debian's Chromium driven by playwright-core, and screenshots of what the tests saw.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Browser, type Page, chromium } from 'playwright-core';
import { ensureConsoleBuilt } from '../../web/build.ts';
import { type StoreKind, type TestServer, startTestServer } from './server.ts';

export const CHROMIUM = process.env.SPANBASE_CHROMIUM ?? '/usr/bin/chromium';

/** Where screenshots go (`SPANBASE_SCREENSHOT_DIR`, else a temporary directory). */
export const SHOT_DIR =
  process.env.SPANBASE_SCREENSHOT_DIR ?? path.join(os.tmpdir(), 'spanbase-console-shots');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export interface ConsoleServer extends TestServer {
  url: string;
  admin: { email: string; password: string };
}

/** A test server on a free port, with an admin who can sign in with a password. */
export async function startConsoleServer(
  store: StoreKind,
  env: Record<string, string> = {},
): Promise<ConsoleServer> {
  await ensureConsoleBuilt();
  const admin = { email: 'admin@example.com', password: 'console-test-password' };
  const s = await startTestServer(store, {
    SPANBASE_ADMIN_EMAIL: admin.email,
    SPANBASE_ADMIN_PASSWORD: admin.password,
    ...env,
  });
  const address = await s.running.app.listen({ port: 0, host: '127.0.0.1' });
  return Object.assign(s, { url: address, admin });
}

export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(SHOT_DIR, { recursive: true });
  const file = path.join(SHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/**
 * At a phone's width (390 px) the page fits: nothing widens it past the viewport (wide tables scroll
 * inside their box). Screenshots it as `<name>-narrow`, then puts the viewport back.
 */
export async function assertFitsPhone(page: Page, name: string): Promise<void> {
  const before = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 860 });
  const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
  await screenshot(page, `${name}-narrow`);
  if (before) await page.setViewportSize(before);
  assert.ok(width <= 390, `${name} is ${width} px wide at a width of 390 px`);
}

/** A browser with one page signed in as the console server's admin, its console errors watched. */
export async function openSignedIn(
  s: ConsoleServer,
  viewport: { width: number; height: number },
  timeout: number,
): Promise<{ browser: Browser; page: Page; errors: string[] }> {
  const browser = await launchChromium();
  const context = await browser.newContext({ viewport });
  context.setDefaultTimeout(timeout);
  const page = await context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${s.url}/login`);
  await signIn(page, s.admin.email, s.admin.password);
  await page.waitForURL((u) => !u.pathname.startsWith('/login'));
  return { browser, page, errors };
}

/** Fills the sign-in form the way a person would. */
export async function signIn(page: Page, email: string, password: string): Promise<void> {
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

/** Collects the page's console errors and failed requests, so a test can say none happened. */
export function watchErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
  return errors;
}

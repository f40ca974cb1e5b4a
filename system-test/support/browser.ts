import type { Context } from 'mocha';
import { type Browser, chromium } from 'playwright-core';
import { findExecutable, pendingOrRequired } from './executables';

/**
 * Debian's Chromium (`chromium`), or `CHROMIUM_BIN`; undefined when none exists. Playwright drives
 * it over the DevTools protocol (playwright-core downloads no browser of its own).
 */
export function findChromium(): string | undefined {
  return findExecutable('CHROMIUM_BIN', 'chromium', '/usr/bin/chromium');
}

/**
 * Launches headless Chromium for a suite, or marks the suite pending when it is missing, with the
 * reason on stderr. With REQUIRE_CHROMIUM=1 (CI) a missing browser fails instead.
 */
export async function launchChromiumOrSkip(context: Context): Promise<Browser> {
  const executablePath = findChromium();
  if (executablePath === undefined) {
    pendingOrRequired(context, 'REQUIRE_CHROMIUM', 'chromium not found (install Debian packages chromium and chromium-driver or set CHROMIUM_BIN)');
  }
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

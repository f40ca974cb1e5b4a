import type { Context } from 'mocha';
import { type Browser, chromium, type Page } from 'playwright-core';
import { type CrossOriginPage, serveCrossOriginPage } from './cross-origin-page';
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
  const executablePath =
    findChromium() ?? pendingOrRequired(context, 'REQUIRE_CHROMIUM', 'chromium not found (install Debian packages chromium and chromium-driver or set CHROMIUM_BIN)');
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

/** Headless Chromium and two pages, each on a loopback origin of its own, for a CORS suite. */
export interface BrowserWithPages {
  /** The page a suite lists in CORS_ORIGINS. */
  readonly allowedPage: CrossOriginPage;
  /** A page of an origin the suite does not list. */
  readonly otherPage: CrossOriginPage;
  /** A new tab, to `goto` one of the pages. */
  newPage(): Promise<Page>;
  close(): Promise<void>;
}

/**
 * Launches Chromium as `launchChromiumOrSkip` does (so the suite may be marked pending), and
 * serves `files` (as `serveCrossOriginPage` takes them) on two origins: the allowed and the other.
 */
export async function launchChromiumWithPagesOrSkip(context: Context, files?: Readonly<Record<string, string>>): Promise<BrowserWithPages> {
  const browser = await launchChromiumOrSkip(context);
  const [allowedPage, otherPage] = await Promise.all([serveCrossOriginPage(files), serveCrossOriginPage(files)]);
  return {
    allowedPage,
    otherPage,
    newPage: () => browser.newPage(),
    close: async () => {
      await browser.close();
      await Promise.all([allowedPage.close(), otherPage.close()]);
    },
  };
}

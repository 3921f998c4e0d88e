import { Browser, chromium } from 'playwright-core';

/**
 * Debian's Chromium, driven by playwright-core (which never downloads a browser of its own).
 * `.ci/run` installs it with apt when it is missing. The flags keep it from reaching out to the
 * network on its own (component updates, sync) and let it run as root in a container.
 */
export const CHROMIUM_PATH = '/usr/bin/chromium';

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

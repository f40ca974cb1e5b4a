/**
 * The bundles `npm run build` writes, as output path (relative to the repository root, without
 * `.js`) to entry source. The Dockerfiles' entry points are checked against it.
 */
export const BUILD_ENTRIES: Readonly<Record<string, string>> = Object.freeze({
  'gateway/dist/main': 'gateway/src/main.ts',
  'gateway/dist/keys-main': 'gateway/src/keys/keys-main.ts',
  'pet-service/dist/main': 'pet-service/src/main.ts',
});

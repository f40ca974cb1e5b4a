import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { createApiDocsRouter, swaggerUiDirectory } from '../../../src/http/api-docs-router';

describe('createApiDocsRouter', () => {
  let directory: string;

  beforeEach(() => {
    directory = mkdtempSync(join(tmpdir(), 'api-docs-'));
  });
  afterEach(() => rmSync(directory, { recursive: true, force: true }));

  it("finds the installed swagger-ui-dist's files", () => {
    expect(() => createApiDocsRouter()).to.not.throw();
    expect(swaggerUiDirectory()).to.match(/[/\\]node_modules[/\\]swagger-ui-dist$/);
  });

  it('fails at creation, naming the file, when an asset the page needs is missing', () => {
    copyFileSync(join(swaggerUiDirectory(), 'package.json'), join(directory, 'package.json'));
    for (const name of ['swagger-ui-bundle.js', 'swagger-ui-bundle.js.map', 'swagger-ui.css', 'swagger-ui.css.map']) {
      writeFileSync(join(directory, name), '');
    }
    expect(() => createApiDocsRouter({ assetDirectory: directory })).to.throw(`API docs asset missing: ${join(directory, 'favicon-32x32.png')}`);
    writeFileSync(join(directory, 'favicon-32x32.png'), '');
    expect(() => createApiDocsRouter({ assetDirectory: directory })).to.not.throw();
  });
});

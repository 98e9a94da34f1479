import { runnerFieldChanges, withBaseRunnerFields } from '../../../../activities/checks/tests/manifest';

/**
 * package.json's scripts and runner keys decide how tests run: a change to them is a change to
 * the runner's configuration, and the gate's overlay takes base's values of them, keeping the
 * change's dependencies.
 */
const base = JSON.stringify({ name: 'm', scripts: { test: 'node --test' }, dependencies: { a: '1' } });

test('a change to the scripts, a runner key or the module type is named; dependencies and other keys are not', () => {
  const after = JSON.stringify({
    name: 'm',
    scripts: { pretest: 'sed -i s/-/+/ src/math.js', test: 'node --require ./p.js --test' },
    jest: { setupFiles: ['./src/patch.js'] },
    type: 'module',
    dependencies: { a: '2', b: '1' },
  });
  expect(runnerFieldChanges('package.json', base, after)).toEqual([
    'scripts.test changed',
    'scripts.pretest added',
    'jest added',
    'type added',
  ]);
  expect(
    runnerFieldChanges('package.json', base, JSON.stringify({ ...JSON.parse(base), dependencies: { b: '3' } })),
  ).toEqual([]);
  expect(runnerFieldChanges('package.json', undefined, JSON.stringify({ type: 'module' }))).toEqual(['type added']);
  expect(runnerFieldChanges('package.json', base, undefined)).toEqual(['scripts.test removed']);
  expect(runnerFieldChanges('package.json', base, 'not json')).toEqual(['its runner keys (not a JSON object)']);
});

test("the overlay's manifest is the change's with base's runner keys: base's scripts back, added runner keys gone, dependencies kept", () => {
  const after = JSON.stringify({
    name: 'm',
    scripts: { test: 'true', posttest: 'x' },
    mocha: { require: 'p.js' },
    dependencies: { b: '1' },
  });
  expect(JSON.parse(withBaseRunnerFields('package.json', base, after)!)).toEqual({
    name: 'm',
    scripts: { test: 'node --test' },
    dependencies: { b: '1' },
  });
  expect(withBaseRunnerFields('package.json', base, '[1]')).toBeUndefined();
});

test("pyproject.toml's and setup.cfg's pytest configuration is runner configuration, in any TOML spelling; their other parts are not", () => {
  const toml = '[project]\nname = "calc"\ndependencies = []\n';
  expect(
    runnerFieldChanges('pyproject.toml', toml, `${toml}\n[tool.pytest.ini_options]\naddopts = "-p calc.plug"\n`),
  ).toEqual(['its pytest configuration added']);
  expect(runnerFieldChanges('sub/pyproject.toml', toml, `tool.pytest.ini_options.addopts = "-p x"\n${toml}`)).toEqual([
    'its pytest configuration added',
  ]);
  expect(
    runnerFieldChanges('pyproject.toml', toml, `${toml}[ tool ]\npytest = { ini_options = { addopts = "-p x" } }\n`),
  ).toEqual(['its pytest configuration added']);
  expect(runnerFieldChanges('pyproject.toml', toml, toml.replace('[]', '["attrs"]'))).toEqual([]);
  expect(runnerFieldChanges('setup.cfg', undefined, '[tool:pytest]\naddopts = -p calc.plug\n')).toEqual([
    'its pytest configuration added',
  ]);
  expect(runnerFieldChanges('setup.cfg', '[metadata]\nname = a\n', '[metadata]\nname = b\n')).toEqual([]);
  expect(withBaseRunnerFields('pyproject.toml', toml, `${toml}[tool.pytest]\naddopts = ["-p", "x"]\n`)).toBeUndefined();
});

/** Runs a bench script's `main`: exit 0 when it resolves, 1 with the error when it throws. */
export function runScript(main: () => Promise<void>): void {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}

/** As many numbers as `D` has defaults. */
type Whole<D extends readonly number[]> = { -readonly [K in keyof D]: number };

/** The whole numbers of argv[2…] (defaults for those not given), or exit 2 with `usage` when one is not whole or fails `ok`. */
export function wholeArgs<const D extends readonly number[]>(
  defaults: D,
  usage: string,
  ok: (values: Whole<D>) => boolean = (v) => v.every((n) => n > 0),
): Whole<D> {
  // One value per default, so the tuple has the defaults' length.
  const values = defaults.map((d, i) => Number(process.argv[2 + i] ?? d)) as unknown as Whole<D>;
  if (!values.every((n) => Number.isInteger(n)) || !ok(values)) {
    console.error(`error: give ${usage}, not ${process.argv.slice(2).join(' ')}`);
    process.exit(2);
  }
  return values;
}

import type { DurableObjectPlacement } from "../config/schema.js";

/** What the stores need of a namespace: a stub by name (`env.LIMITER` and `env.OVERRIDES` fit it). */
interface NamedObjects<T extends Rpc.DurableObjectBranded | undefined> {
  getByName(name: string): DurableObjectStub<T>;
}

/**
 * A namespace whose objects are opened where the config's `durableObjects` says: in its
 * jurisdiction (where an object runs and stores its data; a name in a jurisdiction is another
 * object than the same name outside it) and with its location hint (where an object is first
 * created, best effort). Every namespace Spillway opens goes through here.
 *
 * @example placedNamespace(env.LIMITER, { jurisdiction: "eu" }).getByName("user:42")
 */
export function placedNamespace<T extends Rpc.DurableObjectBranded | undefined>(namespace: DurableObjectNamespace<T>, placement: DurableObjectPlacement): NamedObjects<T> {
  const { jurisdiction, locationHint } = placement;
  if (jurisdiction === undefined && locationHint === undefined) return namespace;
  const scoped = jurisdiction === undefined ? namespace : namespace.jurisdiction(jurisdiction);
  if (locationHint === undefined) return scoped;
  const options = { locationHint };
  return { getByName: (name) => scoped.getByName(name, options) };
}

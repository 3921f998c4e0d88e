import { FixtureCapabilitiesModule } from '../../test/fixtures/fixture-capabilities';
import { bootRegistry } from '../../test/support/capability-registry';
import { CapabilityDescriptorView, CapabilityListView, ToolDescriptorView } from './capabilities.dto';

/** The OpenAPI views are written by hand: they must name exactly the fields the catalog serves. */
describe('catalog OpenAPI views', () => {
  it('document every field of a descriptor and of a tool descriptor, and nothing else', async () => {
    const { registry, moduleRef } = await bootRegistry([FixtureCapabilitiesModule]);
    const descriptor = registry.catalog().find((d) => d.id === 'fixture-notes')!;
    expect(Object.keys(new CapabilityDescriptorView()).sort()).toEqual([...Object.keys(descriptor), 'available'].sort());
    expect(Object.keys(new ToolDescriptorView()).sort()).toEqual(Object.keys(descriptor.tools[0]).sort());
    expect(Object.keys(new CapabilityListView())).toEqual(['items', 'nextCursor']);
    await moduleRef.close();
  });
});

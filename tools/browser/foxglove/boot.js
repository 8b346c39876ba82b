// Renders Foxglove Studio's App as its web build does: an app configuration, a layout
// storage, the data sources and the page URL as the deep link (`?ds=remote-file&ds.url=`).
// The bundle's exports are globals of the page (its UMD wrapper puts them on `self`).
'use strict';

// Settings kept for the page's life; the defaults skip the first-run prompts.
class MemoryAppConfiguration {
  constructor(defaults) {
    this.values = new Map(Object.entries(defaults));
    this.listeners = new Map();
  }

  get(key) {
    return this.values.get(key);
  }

  async set(key, value) {
    this.values.set(key, value);
    for (const listener of this.listeners.get(key) ?? []) {
      listener(value);
    }
  }

  addChangeListener(key, listener) {
    this.listeners.set(key, [...(this.listeners.get(key) ?? []), listener]);
  }

  removeChangeListener(key, listener) {
    this.listeners.set(key, (this.listeners.get(key) ?? []).filter((l) => l !== listener));
  }
}

// The layouts in localStorage under one key, as rows {namespace, layout}: a page script can
// put a layout there before the app starts, as the web build's IndexedDB storage would hold it.
class LocalStorageLayouts {
  constructor(key) {
    this.key = key;
  }

  rows() {
    return JSON.parse(localStorage.getItem(this.key) ?? '[]');
  }

  async list(namespace) {
    return this.rows().filter((r) => r.namespace === namespace).map((r) => migrateLayout(r.layout));
  }

  async get(namespace, id) {
    const row = this.rows().find((r) => r.namespace === namespace && r.layout.id === id);
    return row === undefined ? undefined : migrateLayout(row.layout);
  }

  async put(namespace, layout) {
    const others = this.rows().filter((r) => !(r.namespace === namespace && r.layout.id === layout.id));
    localStorage.setItem(this.key, JSON.stringify([...others, { namespace, layout }]));
    return layout;
  }

  async delete(namespace, id) {
    const others = this.rows().filter((r) => !(r.namespace === namespace && r.layout.id === id));
    localStorage.setItem(this.key, JSON.stringify(others));
  }

  async importLayouts({ fromNamespace, toNamespace }) {
    for (const layout of await this.list(fromNamespace)) {
      await this.put(toNamespace, layout);
      await this.delete(fromNamespace, layout.id);
    }
  }
}

async function boot() {
  installDevtoolsFormatters();
  overwriteFetch();
  await waitForFonts();
  await initI18n();
  const app = React.createElement(App, {
    deepLinks: [window.location.href],
    appConfiguration: new MemoryAppConfiguration({
      [AppSetting.COLOR_SCHEME]: 'light',
      [AppSetting.TELEMETRY_ENABLED]: false,
      [AppSetting.CRASH_REPORTING_ENABLED]: false,
      [AppSetting.HIDE_SIGN_IN_PROMPT]: true,
      [AppSetting.SHOW_OPEN_DIALOG_ON_STARTUP]: false,
      [AppSetting.UPDATES_ENABLED]: false,
    }),
    dataSources: [new RemoteDataSourceFactory(), new McapLocalDataSourceFactory()],
    layoutStorage: new LocalStorageLayouts('working_memory.layouts'),
    extensionLoaders: [],
    enableGlobalCss: true,
  });
  ReactDOM.render(app, document.getElementById('root'));
}

boot().catch((error) => console.error('boot failed:', error));

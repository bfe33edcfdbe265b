/**
 * What is decided once per app and route, by the app (its `ApplicationConfig`, or an object
 * standing for an app without one), the controller and the handler, all held weakly: the
 * enhancers and settings are fixed once the app is initialised, before its first request. One
 * process may hold several apps of the same controllers (tests do), each with its own.
 */
export class PerAppRoute<T> {
  private readonly byApp = new WeakMap<object, WeakMap<object, WeakMap<object, T>>>();

  get(app: object, controller: object, handler: object): T | undefined {
    return this.byApp.get(app)?.get(controller)?.get(handler);
  }

  /** The route's value, computed by `compute` the first time it is asked for. */
  resolve(app: object, controller: object, handler: object, compute: () => T): T {
    const known = this.get(app, controller, handler);
    return known !== undefined ? known : this.set(app, controller, handler, compute());
  }

  /** Keeps `value` for the route, and returns it. */
  set(app: object, controller: object, handler: object, value: T): T {
    let byController = this.byApp.get(app);
    if (!byController) this.byApp.set(app, (byController = new WeakMap()));
    let byHandler = byController.get(controller);
    if (!byHandler) byController.set(controller, (byHandler = new WeakMap()));
    byHandler.set(handler, value);
    return value;
  }
}

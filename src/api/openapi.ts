/**
 * The OpenAPI (Swagger 2.0) document of `/openapi/v2`: the metric read paths of the served
 * groups and the definitions of their lists and of `Status`.
 *
 * @module
 */
import { CUSTOM_GROUP, CUSTOM_VERSIONS, EXTERNAL_GROUP, type VersionInfo } from "./discovery.ts";

/** The document for `groups` (the served API groups). */
export function openApiDocument(version: VersionInfo, groups: string[]): unknown {
  const paths: Record<string, unknown> = {};
  const param = (name: string, where: "path" | "query") => ({
    name,
    in: where,
    required: where === "path",
    type: "string",
    ...(where === "query" ? {} : { uniqueItems: true }),
  });
  const op = (id: string, ref: string, params: unknown[]) => ({
    get: {
      operationId: id,
      produces: ["application/json"],
      schemes: ["https"],
      parameters: params,
      responses: {
        "200": { description: "OK", schema: { $ref: `#/definitions/${ref}` } },
        "404": { description: "Not Found", schema: { $ref: "#/definitions/Status" } },
      },
    },
  });
  const q = [param("labelSelector", "query"), param("metricLabelSelector", "query")];
  if (groups.includes(CUSTOM_GROUP)) {
    for (const v of CUSTOM_VERSIONS) {
      const base = `/apis/${CUSTOM_GROUP}/${v}`;
      const id = `CustomMetrics${v[0].toUpperCase()}${v.slice(1)}`;
      paths[`${base}/namespaces/{namespace}/{resource}/{name}/{metric}`] = op(
        `listNamespaced${id}`,
        "MetricValueList",
        [
          param("namespace", "path"),
          param("resource", "path"),
          param("name", "path"),
          param("metric", "path"),
          ...q,
        ],
      );
      paths[`${base}/{resource}/{name}/{metric}`] = op(`list${id}`, "MetricValueList", [
        param("resource", "path"),
        param("name", "path"),
        param("metric", "path"),
        ...q,
      ]);
      paths[`${base}/namespaces/{namespace}/metrics/{metric}`] = op(
        `read${id}ForNamespace`,
        "MetricValueList",
        [param("namespace", "path"), param("metric", "path"), ...q],
      );
    }
  }
  if (groups.includes(EXTERNAL_GROUP)) {
    paths[`/apis/${EXTERNAL_GROUP}/v1beta1/namespaces/{namespace}/{metric}`] = op(
      "listNamespacedExternalMetricsV1beta1",
      "ExternalMetricValueList",
      [param("namespace", "path"), param("metric", "path"), param("labelSelector", "query")],
    );
  }
  const obj = (properties: Record<string, unknown>, required: string[] = []) => ({
    type: "object",
    ...(required.length ? { required } : {}),
    properties,
  });
  const str = { type: "string" };
  const list = (item: string) =>
    obj({
      kind: str,
      apiVersion: str,
      metadata: { type: "object" },
      items: { type: "array", items: { $ref: `#/definitions/${item}` } },
    }, ["items"]);
  return {
    swagger: "2.0",
    info: { title: "hpa-metrics-adapter", version: version.gitVersion },
    paths,
    definitions: {
      MetricValueList: list("MetricValue"),
      MetricValue: obj({
        describedObject: { type: "object" },
        metric: obj({ name: str, selector: { type: "object" } }),
        metricName: str,
        selector: { type: "object" },
        timestamp: { type: "string", format: "date-time" },
        windowSeconds: { type: "integer", format: "int64" },
        window: { type: "integer", format: "int64" },
        value: str,
      }, ["describedObject", "timestamp", "value"]),
      ExternalMetricValueList: list("ExternalMetricValue"),
      ExternalMetricValue: obj({
        metricName: str,
        metricLabels: { type: "object", additionalProperties: str },
        timestamp: { type: "string", format: "date-time" },
        window: { type: "integer", format: "int64" },
        value: str,
      }, ["metricName", "metricLabels", "timestamp", "value"]),
      Status: obj({
        kind: str,
        apiVersion: str,
        metadata: { type: "object" },
        status: str,
        message: str,
        reason: str,
        code: { type: "integer", format: "int32" },
      }),
    },
  };
}
